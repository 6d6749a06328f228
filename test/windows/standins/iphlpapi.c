/* Stand-in iphlpapi.dll (route table and interface calls), compiled against mingw-w64's iphlpapi.h /
 * netioapi.h: the definitions below must match the SDK prototypes or this file does not compile.
 * Loaded by full path from --win32-dll-dir (Wine's own iphlpapi.dll is already loaded by Node).
 * Rows are encoded/decoded here with the header's struct layout; the simulator (test/windows/sim-server.ts)
 * decides every NETIO status (5010 duplicate route, 1168 missing route/interface, 87 bad row). */
#include "simlink.h"
#include <iphlpapi.h>
#include <netioapi.h>
#include "netioapi-dns.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ST_TRANSPORT ERROR_GEN_FAILURE /* 31: the simulator could not be reached */

/* MIB tables carry a header so FreeMibTable can tell ours from anything else (and catch double frees). */
#define MIB_MAGIC 0x464C4D49424D4942ULL /* "BIMBMLF" */
typedef struct {
  unsigned long long magic;
  unsigned long long pad;
} mib_header;

static void *mib_alloc(size_t size) {
  mib_header *h = HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, sizeof(mib_header) + size);
  if (!h) return NULL;
  h->magic = MIB_MAGIC;
  return h + 1;
}

static DWORD reply_status(char *reply) { return (DWORD)jr_u64(reply, "st", ST_TRANSPORT); }

/* Send a request whose reply is only a status; the request is freed. */
static DWORD status_call(jbuf *b) {
  char *reply = sim_call(b);
  jb_free(b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  free(reply);
  return st;
}

static void jb_ipv4(jbuf *b, const char *key, const SOCKADDR_INET *a) {
  char s[16];
  const unsigned char *p = (const unsigned char *)&a->Ipv4.sin_addr;
  wsprintfA(s, "%u.%u.%u.%u", p[0], p[1], p[2], p[3]);
  jb_str(b, key, s);
}

/* An address of either family as text: dotted IPv4, or IPv6 as eight hex groups (the server normalises it). */
static void jb_inet(jbuf *b, const char *key, const SOCKADDR_INET *a) {
  if (a->si_family != AF_INET6) { jb_ipv4(b, key, a); return; }
  char s[48];
  const unsigned char *p = a->Ipv6.sin6_addr.s6_addr;
  wsprintfA(s, "%x:%x:%x:%x:%x:%x:%x:%x", (p[0] << 8) | p[1], (p[2] << 8) | p[3], (p[4] << 8) | p[5], (p[6] << 8) | p[7],
            (p[8] << 8) | p[9], (p[10] << 8) | p[11], (p[12] << 8) | p[13], (p[14] << 8) | p[15]);
  jb_str(b, key, s);
}

/* A row's address from the wire: its family, then 16 bytes (an IPv4 address in the first 4). */
static void put_inet(SOCKADDR_INET *a, const unsigned long long *f) {
  memset(a, 0, sizeof *a);
  a->si_family = (ADDRESS_FAMILY)f[0];
  unsigned char *p = a->si_family == AF_INET6 ? a->Ipv6.sin6_addr.s6_addr : (unsigned char *)&a->Ipv4.sin_addr;
  size_t n = a->si_family == AF_INET6 ? 16 : 4;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)f[1 + i];
}

/* A MIB table call: ask the simulator for `fn`'s rows of `family` (`fields` integers each) and allocate the
 * table (`header` bytes, then one `row` per row) that FreeMibTable frees. NO_ERROR leaves the rows in *v
 * (the caller frees them) and the table in *table. */
static DWORD mib_rows(const char *fn, ADDRESS_FAMILY family, int fields, size_t header, size_t row, unsigned long long **v, ULONG *rows, void **table) {
  jbuf b;
  jb_init(&b, fn);
  jb_u64(&b, "family", family);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  *v = NULL;
  int n = jr_u64_array(reply, "rows", v);
  free(reply);
  if (st != NO_ERROR) { free(*v); return st; }
  if (n < 0 || n % fields) { free(*v); return ST_TRANSPORT; }
  *rows = (ULONG)(n / fields);
  *table = mib_alloc(header + (size_t)(*rows ? *rows : 1) * row);
  if (!*table) { free(*v); return ERROR_NOT_ENOUGH_MEMORY; }
  /* count it so the harness can check every table is freed */
  jb_init(&b, "MibTableAllocated");
  free(sim_call(&b));
  jb_free(&b);
  return NO_ERROR;
}

/* ---- routes ---- */

#define INET_FIELDS 17 /* family, 16 address bytes */
#define ROUTE_FIELDS (2 + INET_FIELDS + 1 + INET_FIELDS + 3) /* luid, index, destination, prefixLength, next hop, metric, protocol, origin */

NETIO_STATUS WINAPI GetIpForwardTable2(ADDRESS_FAMILY Family, PMIB_IPFORWARD_TABLE2 *Table) {
  if (!Table) return ERROR_INVALID_PARAMETER;
  *Table = NULL;
  unsigned long long *v;
  ULONG rows;
  PMIB_IPFORWARD_TABLE2 t;
  DWORD st = mib_rows("GetIpForwardTable2", Family, ROUTE_FIELDS, offsetof(MIB_IPFORWARD_TABLE2, Table), sizeof(MIB_IPFORWARD_ROW2), &v, &rows, (void **)&t);
  if (st != NO_ERROR) return st;
  t->NumEntries = rows;
  for (ULONG i = 0; i < rows; i++) {
    unsigned long long *f = v + (size_t)i * ROUTE_FIELDS;
    MIB_IPFORWARD_ROW2 *r = &t->Table[i];
    r->InterfaceLuid.Value = f[0];
    r->InterfaceIndex = (NET_IFINDEX)f[1];
    put_inet(&r->DestinationPrefix.Prefix, f + 2);
    r->DestinationPrefix.PrefixLength = (UINT8)f[2 + INET_FIELDS];
    put_inet(&r->NextHop, f + 3 + INET_FIELDS);
    r->SitePrefixLength = 0;
    r->ValidLifetime = 0xffffffff;
    r->PreferredLifetime = 0xffffffff;
    r->Metric = (ULONG)f[3 + 2 * INET_FIELDS];
    r->Protocol = (NL_ROUTE_PROTOCOL)f[4 + 2 * INET_FIELDS];
    r->Loopback = FALSE;
    r->AutoconfigureAddress = FALSE;
    r->Publish = FALSE;
    r->Immortal = FALSE;
    r->Age = 0;
    r->Origin = (NL_ROUTE_ORIGIN)f[5 + 2 * INET_FIELDS];
  }
  free(v);
  *Table = t;
  return NO_ERROR;
}

VOID WINAPI FreeMibTable(PVOID Memory) {
  if (!Memory) return;
  mib_header *h = (mib_header *)Memory - 1;
  jbuf b;
  jb_init(&b, "FreeMibTable");
  jb_u64(&b, "ok", h->magic == MIB_MAGIC ? 1 : 0);
  char *reply = sim_call(&b);
  jb_free(&b);
  free(reply);
  if (h->magic != MIB_MAGIC) return; /* not ours or already freed: reported above, never touched */
  h->magic = 0;
  HeapFree(GetProcessHeap(), 0, h);
}

/* Like Windows: zero, lifetimes infinite; Metric, Protocol and SitePrefixLength left invalid (the caller sets them). */
VOID WINAPI InitializeIpForwardEntry(PMIB_IPFORWARD_ROW2 Row) {
  if (!Row) return;
  memset(Row, 0, sizeof *Row);
  Row->ValidLifetime = 0xffffffff;
  Row->PreferredLifetime = 0xffffffff;
  Row->Metric = 0xffffffff;
  Row->Protocol = (NL_ROUTE_PROTOCOL)-1;
  Row->SitePrefixLength = 0xff;
  Row->Loopback = TRUE;
  Row->AutoconfigureAddress = TRUE;
  Row->Origin = NlroManual;
}

static NETIO_STATUS route_call(const char *fn, const MIB_IPFORWARD_ROW2 *Row) {
  if (!Row) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, fn);
  jb_u64(&b, "luid", Row->InterfaceLuid.Value);
  jb_u64(&b, "ifIndex", Row->InterfaceIndex);
  jb_u64(&b, "destFamily", Row->DestinationPrefix.Prefix.si_family);
  jb_inet(&b, "dest", &Row->DestinationPrefix.Prefix);
  jb_u64(&b, "prefixLength", Row->DestinationPrefix.PrefixLength);
  jb_u64(&b, "nextHopFamily", Row->NextHop.si_family);
  jb_inet(&b, "nextHop", &Row->NextHop);
  jb_u64(&b, "sitePrefixLength", Row->SitePrefixLength);
  jb_u64(&b, "metric", Row->Metric);
  jb_i64(&b, "protocol", (long long)(int)Row->Protocol);
  jb_u64(&b, "validLifetime", Row->ValidLifetime);
  jb_u64(&b, "preferredLifetime", Row->PreferredLifetime);
  return status_call(&b);
}

NETIO_STATUS WINAPI CreateIpForwardEntry2(CONST MIB_IPFORWARD_ROW2 *Row) { return route_call("CreateIpForwardEntry2", Row); }
NETIO_STATUS WINAPI DeleteIpForwardEntry2(CONST MIB_IPFORWARD_ROW2 *Row) { return route_call("DeleteIpForwardEntry2", Row); }

/* ---- addresses ---- */

#define ADDR_FIELDS 6 /* a0-a3, index, prefixLength */

DWORD WINAPI GetIpAddrTable(PMIB_IPADDRTABLE pIpAddrTable, PULONG pdwSize, WINBOOL bOrder) {
  if (!pdwSize) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "GetIpAddrTable");
  jb_u64(&b, "order", bOrder ? 1 : 0);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  unsigned long long *v = NULL;
  int n = jr_u64_array(reply, "rows", &v);
  free(reply);
  if (st != NO_ERROR) { free(v); return st; }
  if (n < 0 || n % ADDR_FIELDS) { free(v); return ST_TRANSPORT; }
  ULONG rows = (ULONG)(n / ADDR_FIELDS);
  ULONG need = (ULONG)(offsetof(MIB_IPADDRTABLE, table) + (size_t)rows * sizeof(MIB_IPADDRROW));
  if (!pIpAddrTable || *pdwSize < need) {
    *pdwSize = need;
    free(v);
    return ERROR_INSUFFICIENT_BUFFER;
  }
  pIpAddrTable->dwNumEntries = rows;
  for (ULONG i = 0; i < rows; i++) {
    unsigned long long *f = v + (size_t)i * ADDR_FIELDS;
    MIB_IPADDRROW *r = &pIpAddrTable->table[i];
    unsigned char *a = (unsigned char *)&r->dwAddr;
    a[0] = (unsigned char)f[0]; a[1] = (unsigned char)f[1]; a[2] = (unsigned char)f[2]; a[3] = (unsigned char)f[3];
    r->dwIndex = (DWORD)f[4];
    ULONG bits = (ULONG)f[5];
    ULONG maskHost = bits == 0 ? 0 : (0xffffffffUL << (32 - bits));
    r->dwMask = htonl(maskHost);
    r->dwBCastAddr = 1;
    r->dwReasmSize = 65535;
    r->unused1 = 0;
    r->wType = MIB_IPADDR_PRIMARY;
  }
  free(v);
  return NO_ERROR;
}

#define UNICAST_FIELDS (8 + INET_FIELDS) /* luid, index, onLinkPrefixLength, prefixOrigin, suffixOrigin, dadState, valid, preferred, address */

/* The adapters' unicast addresses of one family (the simulator lists IPv6 ones), allocated as
 * GetIpForwardTable2's table is (freed with FreeMibTable). */
NETIO_STATUS WINAPI GetUnicastIpAddressTable(ADDRESS_FAMILY Family, PMIB_UNICASTIPADDRESS_TABLE *Table) {
  if (!Table) return ERROR_INVALID_PARAMETER;
  *Table = NULL;
  unsigned long long *v;
  ULONG rows;
  PMIB_UNICASTIPADDRESS_TABLE t;
  DWORD st = mib_rows("GetUnicastIpAddressTable", Family, UNICAST_FIELDS, offsetof(MIB_UNICASTIPADDRESS_TABLE, Table), sizeof(MIB_UNICASTIPADDRESS_ROW), &v, &rows,
                      (void **)&t);
  if (st != NO_ERROR) return st;
  t->NumEntries = rows;
  for (ULONG i = 0; i < rows; i++) {
    unsigned long long *f = v + (size_t)i * UNICAST_FIELDS;
    MIB_UNICASTIPADDRESS_ROW *r = &t->Table[i];
    r->InterfaceLuid.Value = f[0];
    r->InterfaceIndex = (NET_IFINDEX)f[1];
    r->OnLinkPrefixLength = (UINT8)f[2];
    r->PrefixOrigin = (NL_PREFIX_ORIGIN)f[3];
    r->SuffixOrigin = (NL_SUFFIX_ORIGIN)f[4];
    r->DadState = (NL_DAD_STATE)f[5];
    r->ValidLifetime = (ULONG)f[6];
    r->PreferredLifetime = (ULONG)f[7];
    put_inet(&r->Address, f + 8);
    r->SkipAsSource = FALSE;
  }
  free(v);
  *Table = t;
  return NO_ERROR;
}

/* Like Windows (Microsoft Learn, InitializeUnicastIpAddressEntry): zero, lifetimes infinite, origins
 * "unchanged", OnLinkPrefixLength left invalid (the caller sets it). */
VOID WINAPI InitializeUnicastIpAddressEntry(PMIB_UNICASTIPADDRESS_ROW Row) {
  if (!Row) return;
  memset(Row, 0, sizeof *Row);
  Row->PrefixOrigin = IpPrefixOriginUnchanged;
  Row->SuffixOrigin = IpSuffixOriginUnchanged;
  Row->ValidLifetime = 0xffffffff;
  Row->PreferredLifetime = 0xffffffff;
  Row->OnLinkPrefixLength = 0xff;
}

NETIO_STATUS WINAPI CreateUnicastIpAddressEntry(CONST MIB_UNICASTIPADDRESS_ROW *Row) {
  if (!Row) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "CreateUnicastIpAddressEntry");
  jb_u64(&b, "luid", Row->InterfaceLuid.Value);
  jb_u64(&b, "ifIndex", Row->InterfaceIndex);
  jb_u64(&b, "family", Row->Address.si_family);
  jb_inet(&b, "address", &Row->Address);
  jb_u64(&b, "onLinkPrefixLength", Row->OnLinkPrefixLength);
  jb_i64(&b, "prefixOrigin", (long long)(int)Row->PrefixOrigin);
  jb_i64(&b, "dadState", (long long)(int)Row->DadState);
  jb_u64(&b, "validLifetime", Row->ValidLifetime);
  return status_call(&b);
}

/* ---- interface identifiers ---- */

NETIO_STATUS WINAPI ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex, PNET_LUID InterfaceLuid) {
  if (!InterfaceLuid) return ERROR_INVALID_PARAMETER;
  InterfaceLuid->Value = 0;
  jbuf b;
  jb_init(&b, "ConvertInterfaceIndexToLuid");
  jb_u64(&b, "ifIndex", InterfaceIndex);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  if (st == NO_ERROR) InterfaceLuid->Value = jr_u64(reply, "luid", 0);
  free(reply);
  return st;
}

NETIO_STATUS WINAPI ConvertInterfaceLuidToIndex(CONST NET_LUID *InterfaceLuid, PNET_IFINDEX InterfaceIndex) {
  if (!InterfaceLuid || !InterfaceIndex) return ERROR_INVALID_PARAMETER;
  *InterfaceIndex = 0;
  jbuf b;
  jb_init(&b, "ConvertInterfaceLuidToIndex");
  jb_u64(&b, "luid", InterfaceLuid->Value);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  if (st == NO_ERROR) *InterfaceIndex = (NET_IFINDEX)jr_u64(reply, "ifIndex", 0);
  free(reply);
  return st;
}

NETIO_STATUS WINAPI ConvertInterfaceLuidToAlias(CONST NET_LUID *InterfaceLuid, PWSTR InterfaceAlias, SIZE_T Length) {
  if (!InterfaceLuid || !InterfaceAlias) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "ConvertInterfaceLuidToAlias");
  jb_u64(&b, "luid", InterfaceLuid->Value);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  PWSTR alias = st == NO_ERROR ? jr_wstr_cotask(reply, "alias") : NULL;
  free(reply);
  if (st != NO_ERROR) return st;
  if (!alias) return ST_TRANSPORT;
  SIZE_T need = (SIZE_T)lstrlenW(alias) + 1;
  if (Length < need) st = ERROR_NOT_ENOUGH_MEMORY;
  else memcpy(InterfaceAlias, alias, need * sizeof(WCHAR));
  CoTaskMemFree(alias);
  return st;
}

NETIO_STATUS WINAPI ConvertInterfaceAliasToLuid(CONST WCHAR *InterfaceAlias, PNET_LUID InterfaceLuid) {
  if (!InterfaceAlias || !InterfaceLuid) return ERROR_INVALID_PARAMETER;
  InterfaceLuid->Value = 0;
  jbuf b;
  jb_init(&b, "ConvertInterfaceAliasToLuid");
  jb_wstr(&b, "alias", InterfaceAlias);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  if (st == NO_ERROR) InterfaceLuid->Value = jr_u64(reply, "luid", 0);
  free(reply);
  return st;
}

NETIO_STATUS WINAPI ConvertInterfaceLuidToGuid(CONST NET_LUID *InterfaceLuid, GUID *InterfaceGuid) {
  if (!InterfaceLuid || !InterfaceGuid) return ERROR_INVALID_PARAMETER;
  memset(InterfaceGuid, 0, sizeof *InterfaceGuid);
  jbuf b;
  jb_init(&b, "ConvertInterfaceLuidToGuid");
  jb_u64(&b, "luid", InterfaceLuid->Value);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  unsigned long long *v = NULL;
  int n = jr_u64_array(reply, "guid", &v);
  free(reply);
  if (st == NO_ERROR) {
    if (n != (int)sizeof(GUID)) st = ST_TRANSPORT;
    else for (int i = 0; i < n; i++) ((unsigned char *)InterfaceGuid)[i] = (unsigned char)v[i];
  }
  free(v);
  return st;
}

/* ---- DNS settings (DNS_INTERFACE_SETTINGS, netioapi-dns.h) ---- */

/* The strings GetInterfaceDnsSettings stores carry a header, so FreeInterfaceDnsSettings can tell ours (and
 * report a double free or a struct it did not fill). */
#define DNS_MAGIC 0x534E44464C4E4E44ULL

static PWSTR dns_wstr(const char *reply, const char *key) {
  PWSTR s = jr_wstr_cotask(reply, key);
  if (!s) return NULL;
  size_t bytes = ((size_t)lstrlenW(s) + 1) * sizeof(WCHAR);
  mib_header *h = HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, sizeof(mib_header) + bytes);
  if (h) {
    h->magic = DNS_MAGIC;
    memcpy(h + 1, s, bytes);
  }
  CoTaskMemFree(s);
  return h ? (PWSTR)(h + 1) : NULL;
}

/* The interface's static DNS servers in NameServer (the other strings NULL), as the simulator lists them.
 * Like Windows, Version must be DNS_INTERFACE_SETTINGS_VERSION1 and Flags empty (Microsoft Learn). */
NETIO_STATUS NETIOAPI_API_ GetInterfaceDnsSettings(GUID Interface, DNS_INTERFACE_SETTINGS *Settings) {
  if (!Settings || Settings->Version != DNS_INTERFACE_SETTINGS_VERSION1 || Settings->Flags != 0) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "GetInterfaceDnsSettings");
  jb_guid(&b, "guid", &Interface);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  if (st == NO_ERROR) {
    ULONG version = Settings->Version;
    memset(Settings, 0, sizeof *Settings);
    Settings->Version = version;
    Settings->NameServer = dns_wstr(reply, "nameServer");
    if (!Settings->NameServer) st = ST_TRANSPORT;
  }
  free(reply);
  return st;
}

VOID NETIOAPI_API_ FreeInterfaceDnsSettings(DNS_INTERFACE_SETTINGS *Settings) {
  if (!Settings) return;
  mib_header *h = Settings->NameServer ? (mib_header *)Settings->NameServer - 1 : NULL;
  jbuf b;
  jb_init(&b, "FreeInterfaceDnsSettings");
  jb_i64(&b, "ok", !h ? 0 : h->magic == DNS_MAGIC ? 1 : -1);
  free(sim_call(&b));
  jb_free(&b);
  if (!h || h->magic != DNS_MAGIC) return; /* not ours or already freed: reported above, never touched */
  h->magic = 0;
  HeapFree(GetProcessHeap(), 0, h);
  Settings->NameServer = NULL;
}

NETIO_STATUS NETIOAPI_API_ SetInterfaceDnsSettings(GUID Interface, const DNS_INTERFACE_SETTINGS *Settings) {
  if (!Settings) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "SetInterfaceDnsSettings");
  jb_guid(&b, "guid", &Interface);
  jb_u64(&b, "version", Settings->Version);
  jb_u64(&b, "flags", Settings->Flags);
  jb_wstr(&b, "nameServer", Settings->NameServer);
  return status_call(&b);
}

/* ---- IP interface rows (forwarding, MTU) ---- */

VOID WINAPI InitializeIpInterfaceEntry(PMIB_IPINTERFACE_ROW Row) {
  if (!Row) return;
  memset(Row, 0, sizeof *Row);
  Row->Family = AF_UNSPEC;
}

NETIO_STATUS WINAPI GetIpInterfaceEntry(PMIB_IPINTERFACE_ROW Row) {
  if (!Row) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "GetIpInterfaceEntry");
  jb_u64(&b, "family", Row->Family);
  jb_u64(&b, "luid", Row->InterfaceLuid.Value);
  jb_u64(&b, "ifIndex", Row->InterfaceIndex);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  if (st == NO_ERROR) {
    ADDRESS_FAMILY family = Row->Family;
    memset(Row, 0, sizeof *Row);
    Row->Family = family;
    Row->InterfaceLuid.Value = jr_u64(reply, "luid", 0);
    Row->InterfaceIndex = (NET_IFINDEX)jr_u64(reply, "ifIndex", 0);
    Row->MaxReassemblySize = 65535;
    Row->ForwardingEnabled = jr_u64(reply, "forwarding", 0) ? TRUE : FALSE;
    Row->WeakHostSend = FALSE;
    Row->WeakHostReceive = FALSE;
    Row->UseAutomaticMetric = TRUE;
    Row->SitePrefixLength = (ULONG)jr_u64(reply, "sitePrefixLength", 0);
    Row->Metric = (ULONG)jr_u64(reply, "metric", 0);
    Row->NlMtu = (ULONG)jr_u64(reply, "mtu", 0);
    Row->Connected = TRUE;
  }
  free(reply);
  return st;
}

NETIO_STATUS WINAPI SetIpInterfaceEntry(PMIB_IPINTERFACE_ROW Row) {
  if (!Row) return ERROR_INVALID_PARAMETER;
  jbuf b;
  jb_init(&b, "SetIpInterfaceEntry");
  jb_u64(&b, "family", Row->Family);
  jb_u64(&b, "luid", Row->InterfaceLuid.Value);
  jb_u64(&b, "ifIndex", Row->InterfaceIndex);
  jb_u64(&b, "forwarding", Row->ForwardingEnabled ? 1 : 0);
  jb_u64(&b, "mtu", Row->NlMtu);
  jb_u64(&b, "sitePrefixLength", Row->SitePrefixLength);
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return ST_TRANSPORT;
  DWORD st = reply_status(reply);
  free(reply);
  return st;
}
