/* Prints sizeof/offsetof of the iphlpapi structures the win32 encoders build by hand, as one JSON
 * object, taken from the SDK headers mingw-w64 ships. test/windows/probe.test.ts compares it with
 * src/win32/encoding.ts. Run under Wine (stdout redirected to a file). The `unicast`, `rows6` and `read6`
 * modes below exchange real row bytes with the TypeScript codecs of src/win32/iphlpapi.ts. */
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <iphlpapi.h>
#include <netioapi.h>
#include "standins/netioapi-dns.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#define F(type, field) printf("%s\"%s\":%u", first++ ? "," : "", #field, (unsigned)offsetof(type, field))
#define S(type) printf("\"size\":%u", (unsigned)sizeof(type))

/* `probe.exe unicast`: call the real GetUnicastIpAddressTable(AF_INET6) and print its status, the table's
 * bytes in hex (for the TypeScript decoder) and each row's fields as the header reads them. */
static int unicast(void) {
  PMIB_UNICASTIPADDRESS_TABLE t = NULL;
  DWORD st = GetUnicastIpAddressTable(AF_INET6, &t);
  printf("{\"status\":%lu", (unsigned long)st);
  if (st == NO_ERROR && t) {
    size_t len = offsetof(MIB_UNICASTIPADDRESS_TABLE, Table) + (size_t)t->NumEntries * sizeof(MIB_UNICASTIPADDRESS_ROW);
    const unsigned char *p = (const unsigned char *)t;
    printf(",\"hex\":\"");
    for (size_t i = 0; i < len; i++) printf("%02x", p[i]);
    printf("\",\"rows\":[");
    for (ULONG i = 0; i < t->NumEntries; i++) {
      const MIB_UNICASTIPADDRESS_ROW *r = &t->Table[i];
      printf("%s{\"family\":%u,\"interfaceIndex\":%lu,\"onLinkPrefixLength\":%u,\"prefixOrigin\":%d,\"suffixOrigin\":%d,\"dadState\":%d}",
             i ? "," : "", (unsigned)r->Address.si_family, (unsigned long)r->InterfaceIndex, (unsigned)r->OnLinkPrefixLength,
             (int)r->PrefixOrigin, (int)r->SuffixOrigin, (int)r->DadState);
    }
    printf("]");
  }
  printf("}\n");
  fflush(stdout);
  if (t) FreeMibTable(t);
  return 0;
}

/* ---- IPv6 rows round-tripped between C and the TypeScript codecs (iphlpapi.ts) ---- */

static void hex(const void *v, size_t n) {
  const unsigned char *p = (const unsigned char *)v;
  for (size_t i = 0; i < n; i++) printf("%02x", p[i]);
}

static int unhex(const char *s, void *v, size_t n) {
  unsigned char *p = (unsigned char *)v;
  if (strlen(s) != 2 * n) return 0;
  for (size_t i = 0; i < n; i++) {
    char b[3] = {s[2 * i], s[2 * i + 1], 0};
    char *end;
    p[i] = (unsigned char)strtoul(b, &end, 16);
    if (*end) return 0;
  }
  return 1;
}

static const char *ip6(const IN6_ADDR *a, char *buf, size_t n) {
  return inet_ntop(AF_INET6, (void *)a, buf, n) ? buf : "?";
}

#define B(x) ((x) ? "true" : "false")

/* The row's fields as the header reads them, keyed like decodeIpForwardRow2's result (NET_LUID as 16 hex digits). */
static void print_route(const MIB_IPFORWARD_ROW2 *r) {
  char d[64], h[64];
  printf("{\"interfaceLuid\":\"%08lx%08lx\",\"interfaceIndex\":%lu,\"family\":%u,\"destination\":\"%s\",\"prefixLength\":%u,"
         "\"nextHopFamily\":%u,\"nextHop\":\"%s\",\"sitePrefixLength\":%u,\"validLifetime\":%lu,\"preferredLifetime\":%lu,\"metric\":%lu,"
         "\"protocol\":%d,\"loopback\":%s,\"autoconfigureAddress\":%s,\"publish\":%s,\"immortal\":%s,\"age\":%lu,\"origin\":%d}",
         (unsigned long)(r->InterfaceLuid.Value >> 32), (unsigned long)(r->InterfaceLuid.Value & 0xffffffffu), (unsigned long)r->InterfaceIndex,
         (unsigned)r->DestinationPrefix.Prefix.si_family, ip6(&r->DestinationPrefix.Prefix.Ipv6.sin6_addr, d, sizeof d),
         (unsigned)r->DestinationPrefix.PrefixLength, (unsigned)r->NextHop.si_family, ip6(&r->NextHop.Ipv6.sin6_addr, h, sizeof h),
         (unsigned)r->SitePrefixLength, (unsigned long)r->ValidLifetime, (unsigned long)r->PreferredLifetime, (unsigned long)r->Metric,
         (int)r->Protocol, B(r->Loopback), B(r->AutoconfigureAddress), B(r->Publish), B(r->Immortal), (unsigned long)r->Age, (int)r->Origin);
}

/* Keyed like decodeIpInterfaceRow's result. */
static void print_interface(const MIB_IPINTERFACE_ROW *r) {
  printf("{\"family\":%u,\"interfaceLuid\":\"%08lx%08lx\",\"interfaceIndex\":%lu,\"forwardingEnabled\":%s,\"sitePrefixLength\":%lu,"
         "\"metric\":%lu,\"nlMtu\":%lu,\"connected\":%s}",
         (unsigned)r->Family, (unsigned long)(r->InterfaceLuid.Value >> 32), (unsigned long)(r->InterfaceLuid.Value & 0xffffffffu),
         (unsigned long)r->InterfaceIndex, B(r->ForwardingEnabled), (unsigned long)r->SitePrefixLength, (unsigned long)r->Metric,
         (unsigned long)r->NlMtu, B(r->Connected));
}

typedef VOID(WINAPI *init_route_fn)(PMIB_IPFORWARD_ROW2);
typedef VOID(WINAPI *init_if_fn)(PMIB_IPINTERFACE_ROW);

/* `probe.exe rows6`: an IPv6 route and an AF_INET6 interface row filled through the header's fields, as
 * hex and as fields. InitializeIpForwardEntry / InitializeIpInterfaceEntry are looked up at run time
 * (Wine 8's iphlpapi.dll does not export them, and a static import would stop the probe loading); when
 * absent the rows start zeroed, and the output says so. */
static int rows6(void) {
  MIB_IPFORWARD_ROW2 r;
  MIB_IPINTERFACE_ROW i;
  HMODULE m = GetModuleHandleA("iphlpapi.dll");
  init_route_fn init_route = m ? (init_route_fn)(void (*)(void))GetProcAddress(m, "InitializeIpForwardEntry") : NULL;
  init_if_fn init_if = m ? (init_if_fn)(void (*)(void))GetProcAddress(m, "InitializeIpInterfaceEntry") : NULL;
  memset(&r, 0, sizeof r);
  memset(&i, 0, sizeof i);
  if (init_route) init_route(&r);
  if (init_if) init_if(&i);

  /* What the route table writes for a remote node's IPv6 pod subnet (encodeIpForwardRow2). */
  r.InterfaceLuid.Value = 0;
  r.InterfaceIndex = 7;
  r.DestinationPrefix.Prefix.si_family = AF_INET6;
  if (inet_pton(AF_INET6, "fd00:10:244:1::", &r.DestinationPrefix.Prefix.Ipv6.sin6_addr) != 1) return 3;
  r.DestinationPrefix.PrefixLength = 64;
  r.NextHop.si_family = AF_INET6;
  if (inet_pton(AF_INET6, "fd00::11", &r.NextHop.Ipv6.sin6_addr) != 1) return 3;
  r.SitePrefixLength = 0;
  r.ValidLifetime = 0xffffffff;
  r.PreferredLifetime = 0xffffffff;
  r.Metric = 256;
  r.Protocol = MIB_IPPROTO_NETMGMT;

  /* An AF_INET6 row as GetIpInterfaceEntry gives it for a connected Ethernet adapter, forwarding enabled. */
  i.Family = AF_INET6;
  i.InterfaceLuid.Info.IfType = IF_TYPE_ETHERNET_CSMACD;
  i.InterfaceLuid.Info.NetLuidIndex = 1;
  i.InterfaceIndex = 7;
  i.ForwardingEnabled = TRUE;
  i.SitePrefixLength = 0;
  i.Metric = 15;
  i.NlMtu = 1450;
  i.Connected = TRUE;

  printf("{\"initialized\":{\"InitializeIpForwardEntry\":%s,\"InitializeIpInterfaceEntry\":%s},\"routeHex\":\"", B(init_route), B(init_if));
  hex(&r, sizeof r);
  printf("\",\"route\":");
  print_route(&r);
  printf(",\"interfaceHex\":\"");
  hex(&i, sizeof i);
  printf("\",\"interface\":");
  print_interface(&i);
  printf("}\n");
  fflush(stdout);
  return 0;
}

/* `probe.exe read6 ROUTEHEX INTERFACEHEX`: the bytes the TypeScript encoders produced, read through the header's fields. */
static int read6(const char *routeHex, const char *interfaceHex) {
  MIB_IPFORWARD_ROW2 r;
  MIB_IPINTERFACE_ROW i;
  if (!unhex(routeHex, &r, sizeof r) || !unhex(interfaceHex, &i, sizeof i)) {
    printf("{\"error\":\"expected %u and %u bytes as hex\"}\n", (unsigned)sizeof r, (unsigned)sizeof i);
    fflush(stdout);
    return 2;
  }
  printf("{\"route\":");
  print_route(&r);
  printf(",\"interface\":");
  print_interface(&i);
  printf("}\n");
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  int first;
  if (argc > 1 && strcmp(argv[1], "unicast") == 0) return unicast();
  if (argc > 1 && strcmp(argv[1], "rows6") == 0) return rows6();
  if (argc > 3 && strcmp(argv[1], "read6") == 0) return read6(argv[2], argv[3]);
  printf("{");

  printf("\"MIB_IPFORWARD_ROW2\":{");
  S(MIB_IPFORWARD_ROW2);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_IPFORWARD_ROW2, InterfaceLuid);
  F(MIB_IPFORWARD_ROW2, InterfaceIndex);
  F(MIB_IPFORWARD_ROW2, DestinationPrefix);
  F(MIB_IPFORWARD_ROW2, DestinationPrefix.Prefix.si_family);
  F(MIB_IPFORWARD_ROW2, DestinationPrefix.Prefix.Ipv4.sin_addr);
  F(MIB_IPFORWARD_ROW2, DestinationPrefix.Prefix.Ipv6.sin6_addr);
  F(MIB_IPFORWARD_ROW2, DestinationPrefix.PrefixLength);
  F(MIB_IPFORWARD_ROW2, NextHop);
  F(MIB_IPFORWARD_ROW2, NextHop.si_family);
  F(MIB_IPFORWARD_ROW2, NextHop.Ipv4.sin_addr);
  F(MIB_IPFORWARD_ROW2, NextHop.Ipv6.sin6_addr);
  F(MIB_IPFORWARD_ROW2, SitePrefixLength);
  F(MIB_IPFORWARD_ROW2, ValidLifetime);
  F(MIB_IPFORWARD_ROW2, PreferredLifetime);
  F(MIB_IPFORWARD_ROW2, Metric);
  F(MIB_IPFORWARD_ROW2, Protocol);
  F(MIB_IPFORWARD_ROW2, Loopback);
  F(MIB_IPFORWARD_ROW2, AutoconfigureAddress);
  F(MIB_IPFORWARD_ROW2, Publish);
  F(MIB_IPFORWARD_ROW2, Immortal);
  F(MIB_IPFORWARD_ROW2, Age);
  F(MIB_IPFORWARD_ROW2, Origin);
  printf("}},");

  printf("\"MIB_IPFORWARD_TABLE2\":{");
  S(MIB_IPFORWARD_TABLE2);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_IPFORWARD_TABLE2, NumEntries);
  F(MIB_IPFORWARD_TABLE2, Table);
  printf("}},");

  printf("\"SOCKADDR_INET\":{");
  S(SOCKADDR_INET);
  printf(",\"offsets\":{");
  first = 0;
  F(SOCKADDR_INET, si_family);
  F(SOCKADDR_INET, Ipv4.sin_port);
  F(SOCKADDR_INET, Ipv4.sin_addr);
  printf("}},");

  printf("\"IP_ADDRESS_PREFIX\":{");
  S(IP_ADDRESS_PREFIX);
  printf(",\"offsets\":{");
  first = 0;
  F(IP_ADDRESS_PREFIX, Prefix);
  F(IP_ADDRESS_PREFIX, PrefixLength);
  printf("}},");

  printf("\"MIB_IPINTERFACE_ROW\":{");
  S(MIB_IPINTERFACE_ROW);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_IPINTERFACE_ROW, Family);
  F(MIB_IPINTERFACE_ROW, InterfaceLuid);
  F(MIB_IPINTERFACE_ROW, InterfaceIndex);
  F(MIB_IPINTERFACE_ROW, MaxReassemblySize);
  F(MIB_IPINTERFACE_ROW, InterfaceIdentifier);
  F(MIB_IPINTERFACE_ROW, AdvertisingEnabled);
  F(MIB_IPINTERFACE_ROW, ForwardingEnabled);
  F(MIB_IPINTERFACE_ROW, WeakHostSend);
  F(MIB_IPINTERFACE_ROW, WeakHostReceive);
  F(MIB_IPINTERFACE_ROW, UseAutomaticMetric);
  F(MIB_IPINTERFACE_ROW, RouterDiscoveryBehavior);
  F(MIB_IPINTERFACE_ROW, ZoneIndices);
  F(MIB_IPINTERFACE_ROW, SitePrefixLength);
  F(MIB_IPINTERFACE_ROW, Metric);
  F(MIB_IPINTERFACE_ROW, NlMtu);
  F(MIB_IPINTERFACE_ROW, Connected);
  F(MIB_IPINTERFACE_ROW, ReachableTime);
  F(MIB_IPINTERFACE_ROW, DisableDefaultRoutes);
  printf("}},");

  printf("\"MIB_IPADDRTABLE\":{");
  S(MIB_IPADDRTABLE);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_IPADDRTABLE, dwNumEntries);
  F(MIB_IPADDRTABLE, table);
  printf("}},");

  printf("\"MIB_IPADDRROW\":{");
  S(MIB_IPADDRROW);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_IPADDRROW, dwAddr);
  F(MIB_IPADDRROW, dwIndex);
  F(MIB_IPADDRROW, dwMask);
  F(MIB_IPADDRROW, dwBCastAddr);
  F(MIB_IPADDRROW, dwReasmSize);
  F(MIB_IPADDRROW, unused1);
  F(MIB_IPADDRROW, wType);
  printf("}},");

  printf("\"MIB_UNICASTIPADDRESS_ROW\":{");
  S(MIB_UNICASTIPADDRESS_ROW);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_UNICASTIPADDRESS_ROW, Address);
  F(MIB_UNICASTIPADDRESS_ROW, Address.si_family);
  F(MIB_UNICASTIPADDRESS_ROW, Address.Ipv4.sin_addr);
  F(MIB_UNICASTIPADDRESS_ROW, Address.Ipv6.sin6_addr);
  F(MIB_UNICASTIPADDRESS_ROW, Address.Ipv6.sin6_scope_id);
  F(MIB_UNICASTIPADDRESS_ROW, InterfaceLuid);
  F(MIB_UNICASTIPADDRESS_ROW, InterfaceIndex);
  F(MIB_UNICASTIPADDRESS_ROW, PrefixOrigin);
  F(MIB_UNICASTIPADDRESS_ROW, SuffixOrigin);
  F(MIB_UNICASTIPADDRESS_ROW, ValidLifetime);
  F(MIB_UNICASTIPADDRESS_ROW, PreferredLifetime);
  F(MIB_UNICASTIPADDRESS_ROW, OnLinkPrefixLength);
  F(MIB_UNICASTIPADDRESS_ROW, SkipAsSource);
  F(MIB_UNICASTIPADDRESS_ROW, DadState);
  F(MIB_UNICASTIPADDRESS_ROW, ScopeId);
  F(MIB_UNICASTIPADDRESS_ROW, CreationTimeStamp);
  printf("}},");

  printf("\"MIB_UNICASTIPADDRESS_TABLE\":{");
  S(MIB_UNICASTIPADDRESS_TABLE);
  printf(",\"offsets\":{");
  first = 0;
  F(MIB_UNICASTIPADDRESS_TABLE, NumEntries);
  F(MIB_UNICASTIPADDRESS_TABLE, Table);
  printf("}},");

  printf("\"DNS_INTERFACE_SETTINGS\":{");
  S(DNS_INTERFACE_SETTINGS);
  printf(",\"offsets\":{");
  first = 0;
  F(DNS_INTERFACE_SETTINGS, Version);
  F(DNS_INTERFACE_SETTINGS, Flags);
  F(DNS_INTERFACE_SETTINGS, Domain);
  F(DNS_INTERFACE_SETTINGS, NameServer);
  F(DNS_INTERFACE_SETTINGS, SearchList);
  F(DNS_INTERFACE_SETTINGS, RegistrationEnabled);
  F(DNS_INTERFACE_SETTINGS, RegisterAdapterName);
  F(DNS_INTERFACE_SETTINGS, EnableLLMNR);
  F(DNS_INTERFACE_SETTINGS, QueryAdapterName);
  F(DNS_INTERFACE_SETTINGS, ProfileNameServer);
  printf("}},");

  printf("\"NET_LUID\":{");
  S(NET_LUID);
  printf("},\"GUID\":{");
  S(GUID);
  printf(",\"offsets\":{");
  first = 0;
  F(GUID, Data1);
  F(GUID, Data2);
  F(GUID, Data3);
  F(GUID, Data4);
  printf("}},\"constants\":{\"AF_INET\":%d,\"AF_INET6\":%d,\"MIB_IPPROTO_NETMGMT\":%d,\"ERROR_OBJECT_ALREADY_EXISTS\":%d,\"ERROR_NOT_FOUND\":%d,"
         "\"ERROR_INSUFFICIENT_BUFFER\":%d,\"ERROR_INVALID_PARAMETER\":%d,\"ERROR_NOT_ENOUGH_MEMORY\":%d,\"IF_MAX_STRING_SIZE\":%d,"
         "\"IpPrefixOriginRouterAdvertisement\":%d,\"IpSuffixOriginLinkLayerAddress\":%d,\"IpSuffixOriginRandom\":%d,\"IpDadStateInvalid\":%d,\"IpDadStateDuplicate\":%d,\"IpDadStateDeprecated\":%d,"
         "\"IpDadStatePreferred\":%d,\"IpPrefixOriginManual\":%d,\"IpPrefixOriginDhcp\":%d,\"NlroManual\":%d,\"NlroDHCP\":%d}",
         AF_INET, AF_INET6, (int)MIB_IPPROTO_NETMGMT, (int)ERROR_OBJECT_ALREADY_EXISTS, (int)ERROR_NOT_FOUND, (int)ERROR_INSUFFICIENT_BUFFER, (int)ERROR_INVALID_PARAMETER,
         (int)ERROR_NOT_ENOUGH_MEMORY, (int)IF_MAX_STRING_SIZE, (int)IpPrefixOriginRouterAdvertisement, (int)IpSuffixOriginLinkLayerAddress,
         (int)IpSuffixOriginRandom, (int)IpDadStateInvalid, (int)IpDadStateDuplicate, (int)IpDadStateDeprecated, (int)IpDadStatePreferred,
         (int)IpPrefixOriginManual, (int)IpPrefixOriginDhcp, (int)NlroManual, (int)NlroDHCP);
  printf("}\n");
  fflush(stdout);
  return 0;
}
