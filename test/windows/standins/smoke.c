/* A small client that calls the stand-ins the way the win32 modules do (DLLs loaded by full path from
 * argv[1], function types taken from the SDK headers) and prints one JSON line per step. Used by
 * test/windows/standins.test.ts to prove the stand-ins + sim-server path independently of the agent. */
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <computenetwork.h>
#include <iphlpapi.h>
#include <netioapi.h>
#include <objbase.h>
#include <stdio.h>
#include <string.h>

typedef HRESULT(WINAPI *HNSCall_t)(PCWSTR, PCWSTR, PCWSTR, PWSTR *);

static HMODULE load(const wchar_t *dir, const wchar_t *name) {
  wchar_t path[MAX_PATH * 2];
  swprintf(path, sizeof path / sizeof path[0], L"%ls\\%ls", dir, name);
  HMODULE m = LoadLibraryW(path);
  if (!m) {
    printf("{\"step\":\"load\",\"dll\":\"%ls\",\"error\":%lu}\n", name, GetLastError());
    fflush(stdout);
    ExitProcess(2);
  }
  return m;
}

#define SYM(mod, name) ((__typeof__(&name))(void *)GetProcAddress(mod, #name))

/* Print a PWSTR as a JSON string (UTF-8), then free it with the real CoTaskMemFree. */
static void pw(const char *key, PWSTR s) {
  printf(",\"%s\":", key);
  if (!s) { printf("null"); return; }
  int n = WideCharToMultiByte(CP_UTF8, 0, s, -1, NULL, 0, NULL, NULL);
  char *u = malloc((size_t)n);
  WideCharToMultiByte(CP_UTF8, 0, s, -1, u, n, NULL, NULL);
  putchar('"');
  for (char *p = u; *p; p++) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if ((unsigned char)*p < 0x20) printf("\\u%04x", (unsigned char)*p);
    else putchar(*p);
  }
  putchar('"');
  free(u);
  CoTaskMemFree(s);
}

static void set_ipv4(SOCKADDR_INET *a, const char *ip) {
  unsigned b0, b1, b2, b3;
  sscanf(ip, "%u.%u.%u.%u", &b0, &b1, &b2, &b3);
  a->si_family = AF_INET;
  unsigned char *p = (unsigned char *)&a->Ipv4.sin_addr;
  p[0] = (unsigned char)b0; p[1] = (unsigned char)b1; p[2] = (unsigned char)b2; p[3] = (unsigned char)b3;
}

int wmain(int argc, wchar_t **argv) {
  if (argc < 2) return 1;
  HMODULE vm = load(argv[1], L"vmcompute.dll");
  HMODULE cn = load(argv[1], L"computenetwork.dll");
  HMODULE ip = load(argv[1], L"iphlpapi.dll");
  HNSCall_t hnsCall = (HNSCall_t)(void *)GetProcAddress(vm, "HNSCall");
  PWSTR out = NULL, err = NULL;
  HRESULT hr;

  hr = hnsCall(L"GET", L"/globals/version", L"", &out);
  printf("{\"step\":\"version\",\"hr\":%ld", (long)hr); pw("out", out); printf("}\n");

  /* v2: create with the zero GUID and a non-ASCII name, query back, close. */
  GUID zero;
  memset(&zero, 0, sizeof zero);
  HCN_NETWORK net = NULL;
  const wchar_t *settings =
      L"{\"Name\":\"sm\u00f6ke-\u732b-\U0001F600\",\"Type\":\"L2Bridge\",\"SchemaVersion\":{\"Major\":2,\"Minor\":0},"
      L"\"Ipams\":[{\"Type\":\"Static\",\"Subnets\":[{\"IpAddressPrefix\":\"10.244.100.0/24\"}]}],"
      L"\"Policies\":[{\"Type\":\"NetAdapterName\",\"Settings\":{\"NetworkAdapterName\":\"Ethernet\"}}],\"Flags\":0}";
  hr = SYM(cn, HcnCreateNetwork)(&zero, settings, &net, &err);
  printf("{\"step\":\"create\",\"hr\":%ld,\"handle\":%llu", (long)hr, (unsigned long long)(uintptr_t)net); pw("err", err); printf("}\n");
  err = NULL;
  hr = SYM(cn, HcnQueryNetworkProperties)(net, L"", &out, &err);
  printf("{\"step\":\"query\",\"hr\":%ld", (long)hr); pw("out", out); pw("err", err); printf("}\n");
  hr = SYM(cn, HcnCloseNetwork)(net);
  printf("{\"step\":\"close\",\"hr\":%ld}\n", (long)hr);

  /* duplicate name: 0x803B0010 + ErrorRecord */
  net = NULL; err = NULL;
  hr = SYM(cn, HcnCreateNetwork)(&zero, settings, &net, &err);
  printf("{\"step\":\"duplicate\",\"hr\":%ld,\"handle\":%llu", (long)hr, (unsigned long long)(uintptr_t)net); pw("err", err); printf("}\n");

  /* enumerate with a Filter (JSON inside JSON) */
  out = NULL; err = NULL;
  hr = SYM(cn, HcnEnumerateNetworks)(L"{\"SchemaVersion\":{\"Major\":2,\"Minor\":0},\"Flags\":0,\"Filter\":\"{\\\"Type\\\":\\\"L2Bridge\\\"}\"}", &out, &err);
  printf("{\"step\":\"enumerate\",\"hr\":%ld", (long)hr); pw("out", out); pw("err", err); printf("}\n");

  /* a stale handle: E_HANDLE */
  hr = SYM(cn, HcnCloseNetwork)((HCN_NETWORK)(uintptr_t)999);
  printf("{\"step\":\"badclose\",\"hr\":%ld}\n", (long)hr);

  /* load balancers, as kube-proxy's hcsshim calls them: create (zero GUID), query, modify, close;
   * enumerate; open and delete one that does not exist; create the same frontend again. */
  HCN_LOADBALANCER lb = NULL;
  const wchar_t *lbSettings =
      L"{\"HostComputeEndpoints\":[\"6B0D3C5E-7A1F-4B2C-9D8E-0F1A2B3C4D5E\"],\"SourceVIP\":\"10.244.100.2\","
      L"\"FrontendVIPs\":[\"10.96.0.10\"],\"PortMappings\":[{\"Protocol\":17,\"InternalPort\":53,\"ExternalPort\":53}],"
      L"\"SchemaVersion\":{\"Major\":2,\"Minor\":0}}";
  hr = SYM(cn, HcnCreateLoadBalancer)(&zero, lbSettings, &lb, &err);
  printf("{\"step\":\"lbCreate\",\"hr\":%ld,\"handle\":%llu", (long)hr, (unsigned long long)(uintptr_t)lb); pw("err", err); printf("}\n");
  err = NULL;
  hr = SYM(cn, HcnQueryLoadBalancerProperties)(lb, L"{\"SchemaVersion\":{\"Major\":2,\"Minor\":0}}", &out, &err);
  printf("{\"step\":\"lbQuery\",\"hr\":%ld", (long)hr); pw("out", out); pw("err", err); printf("}\n");
  err = NULL;
  const wchar_t *lbModified =
      L"{\"HostComputeEndpoints\":[\"6B0D3C5E-7A1F-4B2C-9D8E-0F1A2B3C4D5E\",\"7C1E4D6F-8B2A-4C3D-8E9F-1A2B3C4D5E6F\"],"
      L"\"SourceVIP\":\"10.244.100.2\",\"FrontendVIPs\":[\"10.96.0.10\"],"
      L"\"PortMappings\":[{\"Protocol\":17,\"InternalPort\":53,\"ExternalPort\":53}],\"SchemaVersion\":{\"Major\":2,\"Minor\":0}}";
  hr = SYM(cn, HcnModifyLoadBalancer)(lb, lbModified, &err);
  printf("{\"step\":\"lbModify\",\"hr\":%ld", (long)hr); pw("err", err); printf("}\n");
  err = NULL;
  hr = SYM(cn, HcnCloseLoadBalancer)(lb);
  printf("{\"step\":\"lbClose\",\"hr\":%ld}\n", (long)hr);
  hr = SYM(cn, HcnEnumerateLoadBalancers)(L"", &out, &err);
  printf("{\"step\":\"lbEnumerate\",\"hr\":%ld", (long)hr); pw("out", out); pw("err", err); printf("}\n");
  err = NULL;
  GUID missing = {0x11111111, 0x2222, 0x4333, {0x84, 0x44, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}};
  hr = SYM(cn, HcnOpenLoadBalancer)(&missing, &lb, &err);
  printf("{\"step\":\"lbOpenMissing\",\"hr\":%ld,\"handle\":%llu", (long)hr, (unsigned long long)(uintptr_t)lb); pw("err", err); printf("}\n");
  err = NULL;
  hr = SYM(cn, HcnDeleteLoadBalancer)(&missing, &err);
  printf("{\"step\":\"lbDeleteMissing\",\"hr\":%ld", (long)hr); pw("err", err); printf("}\n");
  err = NULL;
  hr = SYM(cn, HcnCreateLoadBalancer)(&zero, lbSettings, &lb, &err);
  printf("{\"step\":\"lbDuplicate\",\"hr\":%ld,\"handle\":%llu", (long)hr, (unsigned long long)(uintptr_t)lb); pw("err", err); printf("}\n");
  err = NULL;

  /* routes: the vNIC index after the vSwitch came up, by alias */
  NET_LUID luid;
  NET_IFINDEX vnic = 0;
  DWORD st = SYM(ip, ConvertInterfaceAliasToLuid)(L"vEthernet (Ethernet)", &luid);
  if (st == NO_ERROR) st = SYM(ip, ConvertInterfaceLuidToIndex)(&luid, &vnic);
  WCHAR alias[IF_MAX_STRING_SIZE + 1];
  DWORD st2 = SYM(ip, ConvertInterfaceLuidToAlias)(&luid, alias, IF_MAX_STRING_SIZE + 1);
  printf("{\"step\":\"vnic\",\"st\":%lu,\"index\":%lu,\"luid\":%llu,\"aliasSt\":%lu", st, (unsigned long)vnic, (unsigned long long)luid.Value, st2);
  pw("alias", st2 == NO_ERROR ? (PWSTR)memcpy(CoTaskMemAlloc(sizeof alias), alias, sizeof alias) : NULL);
  printf("}\n");

  MIB_IPFORWARD_ROW2 row;
  SYM(ip, InitializeIpForwardEntry)(&row);
  row.InterfaceIndex = vnic;
  set_ipv4(&row.DestinationPrefix.Prefix, "10.244.1.0");
  row.DestinationPrefix.PrefixLength = 24;
  set_ipv4(&row.NextHop, "10.0.0.11");
  DWORD uninit = SYM(ip, CreateIpForwardEntry2)(&row); /* Metric/Protocol/SitePrefixLength still invalid */
  row.Metric = 0;
  row.Protocol = MIB_IPPROTO_NETMGMT;
  row.SitePrefixLength = 0;
  DWORD add1 = SYM(ip, CreateIpForwardEntry2)(&row);
  DWORD add2 = SYM(ip, CreateIpForwardEntry2)(&row);
  printf("{\"step\":\"routeAdd\",\"uninit\":%lu,\"first\":%lu,\"again\":%lu}\n", uninit, add1, add2);

  PMIB_IPFORWARD_TABLE2 table = NULL;
  st = SYM(ip, GetIpForwardTable2)(AF_INET, &table);
  printf("{\"step\":\"table\",\"st\":%lu,\"rows\":[", st);
  for (ULONG i = 0; table && i < table->NumEntries; i++) {
    unsigned char *d = (unsigned char *)&table->Table[i].DestinationPrefix.Prefix.Ipv4.sin_addr;
    unsigned char *n = (unsigned char *)&table->Table[i].NextHop.Ipv4.sin_addr;
    printf("%s\"%u.%u.%u.%u/%u via %u.%u.%u.%u if %lu\"", i ? "," : "", d[0], d[1], d[2], d[3], table->Table[i].DestinationPrefix.PrefixLength, n[0], n[1],
           n[2], n[3], (unsigned long)table->Table[i].InterfaceIndex);
  }
  printf("]}\n");
  SYM(ip, FreeMibTable)(table);

  DWORD del1 = SYM(ip, DeleteIpForwardEntry2)(&row);
  DWORD del2 = SYM(ip, DeleteIpForwardEntry2)(&row);
  printf("{\"step\":\"routeDelete\",\"first\":%lu,\"again\":%lu}\n", del1, del2);

  /* forwarding through Get/SetIpInterfaceEntry */
  MIB_IPINTERFACE_ROW ifr;
  SYM(ip, InitializeIpInterfaceEntry)(&ifr);
  ifr.Family = AF_INET;
  ifr.InterfaceIndex = vnic;
  st = SYM(ip, GetIpInterfaceEntry)(&ifr);
  ULONG spl = ifr.SitePrefixLength;
  ifr.ForwardingEnabled = TRUE;
  DWORD setBad = SYM(ip, SetIpInterfaceEntry)(&ifr); /* SitePrefixLength not cleared: 87 */
  ifr.SitePrefixLength = 0;
  DWORD setOk = SYM(ip, SetIpInterfaceEntry)(&ifr);
  printf("{\"step\":\"forwarding\",\"get\":%lu,\"mtu\":%lu,\"sitePrefixLength\":%lu,\"setUncleared\":%lu,\"set\":%lu}\n", st, ifr.NlMtu, spl, setBad, setOk);

  ULONG size = 0;
  DWORD first = SYM(ip, GetIpAddrTable)(NULL, &size, TRUE);
  PMIB_IPADDRTABLE at = malloc(size);
  DWORD second = SYM(ip, GetIpAddrTable)(at, &size, TRUE);
  printf("{\"step\":\"addrs\",\"first\":%lu,\"second\":%lu,\"rows\":[", first, second);
  for (DWORD i = 0; second == NO_ERROR && i < at->dwNumEntries; i++) {
    unsigned char *a = (unsigned char *)&at->table[i].dwAddr;
    unsigned char *m = (unsigned char *)&at->table[i].dwMask;
    printf("%s\"%u.%u.%u.%u/%u.%u.%u.%u if %lu\"", i ? "," : "", a[0], a[1], a[2], a[3], m[0], m[1], m[2], m[3], at->table[i].dwIndex);
  }
  printf("]}\n");
  free(at);
  fflush(stdout);
  return 0;
}
