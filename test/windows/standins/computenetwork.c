/* Stand-in computenetwork.dll (HCN v2), compiled against mingw-w64's computenetwork.h: the definitions
 * below must match the SDK prototypes or this file does not compile. Every call is forwarded to the
 * simulator (test/windows/sim-server.ts); results and ErrorRecords are CoTaskMemAlloc'd, handles are the
 * simulator's small integers cast to HCN_NETWORK / HCN_ENDPOINT / HCN_NAMESPACE / HCN_LOADBALANCER. */
#include "simlink.h"
#include <computenetwork.h>
#include <stdint.h>
#include <stdlib.h>

/* Send; fill the out-strings the caller asked for; return the simulator's HRESULT. */
static HRESULT finish(jbuf *b, PWSTR *result, PWSTR *errorRecord, void **handle) {
  char *reply = sim_call(b);
  jb_free(b);
  if (!reply) return SIM_E_TRANSPORT;
  HRESULT hr = (HRESULT)jr_u64(reply, "hr", (unsigned long long)SIM_E_TRANSPORT);
  if (result) *result = jr_wstr_cotask(reply, "out");
  if (errorRecord) *errorRecord = jr_wstr_cotask(reply, "err");
  if (handle) *handle = (void *)(uintptr_t)jr_u64(reply, "h", 0);
  free(reply);
  return hr;
}

static void clear(PWSTR *a, PWSTR *b) {
  if (a) *a = NULL;
  if (b) *b = NULL;
}

#define H(x) ((unsigned long long)(uintptr_t)(x))

/* ---- networks ---- */

HRESULT WINAPI HcnEnumerateNetworks(PCWSTR Query, PWSTR *Networks, PWSTR *ErrorRecord) {
  clear(Networks, ErrorRecord);
  if (!Networks) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnEnumerateNetworks");
  jb_wstr(&b, "query", Query);
  return finish(&b, Networks, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCreateNetwork(REFGUID Id, PCWSTR Settings, PHCN_NETWORK Network, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (Network) *Network = NULL;
  if (!Id || !Network) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnCreateNetwork");
  jb_guid(&b, "id", Id);
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, Network);
}

HRESULT WINAPI HcnOpenNetwork(REFGUID Id, PHCN_NETWORK Network, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (Network) *Network = NULL;
  if (!Id || !Network) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnOpenNetwork");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, Network);
}

HRESULT WINAPI HcnModifyNetwork(HCN_NETWORK Network, PCWSTR Settings, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  jbuf b;
  jb_init(&b, "HcnModifyNetwork");
  jb_u64(&b, "h", H(Network));
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnQueryNetworkProperties(HCN_NETWORK Network, PCWSTR Query, PWSTR *Properties, PWSTR *ErrorRecord) {
  clear(Properties, ErrorRecord);
  if (!Properties) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnQueryNetworkProperties");
  jb_u64(&b, "h", H(Network));
  jb_wstr(&b, "query", Query);
  return finish(&b, Properties, ErrorRecord, NULL);
}

HRESULT WINAPI HcnDeleteNetwork(REFGUID Id, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (!Id) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnDeleteNetwork");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCloseNetwork(HCN_NETWORK Network) {
  jbuf b;
  jb_init(&b, "HcnCloseNetwork");
  jb_u64(&b, "h", H(Network));
  return finish(&b, NULL, NULL, NULL);
}

/* ---- endpoints ---- */

HRESULT WINAPI HcnEnumerateEndpoints(PCWSTR Query, PWSTR *Endpoints, PWSTR *ErrorRecord) {
  clear(Endpoints, ErrorRecord);
  if (!Endpoints) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnEnumerateEndpoints");
  jb_wstr(&b, "query", Query);
  return finish(&b, Endpoints, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCreateEndpoint(HCN_NETWORK Network, REFGUID Id, PCWSTR Settings, PHCN_ENDPOINT Endpoint, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (Endpoint) *Endpoint = NULL;
  if (!Id || !Endpoint) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnCreateEndpoint");
  jb_u64(&b, "h", H(Network));
  jb_guid(&b, "id", Id);
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, Endpoint);
}

HRESULT WINAPI HcnOpenEndpoint(REFGUID Id, PHCN_ENDPOINT Endpoint, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (Endpoint) *Endpoint = NULL;
  if (!Id || !Endpoint) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnOpenEndpoint");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, Endpoint);
}

HRESULT WINAPI HcnModifyEndpoint(HCN_ENDPOINT Endpoint, PCWSTR Settings, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  jbuf b;
  jb_init(&b, "HcnModifyEndpoint");
  jb_u64(&b, "h", H(Endpoint));
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnQueryEndpointProperties(HCN_ENDPOINT Endpoint, PCWSTR Query, PWSTR *Properties, PWSTR *ErrorRecord) {
  clear(Properties, ErrorRecord);
  if (!Properties) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnQueryEndpointProperties");
  jb_u64(&b, "h", H(Endpoint));
  jb_wstr(&b, "query", Query);
  return finish(&b, Properties, ErrorRecord, NULL);
}

HRESULT WINAPI HcnDeleteEndpoint(REFGUID Id, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (!Id) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnDeleteEndpoint");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCloseEndpoint(HCN_ENDPOINT Endpoint) {
  jbuf b;
  jb_init(&b, "HcnCloseEndpoint");
  jb_u64(&b, "h", H(Endpoint));
  return finish(&b, NULL, NULL, NULL);
}

/* ---- namespaces (hcsshim hcn/hcnnamespace.go: the CNI plugins attach pod endpoints to the pod's namespace) ---- */

HRESULT WINAPI HcnEnumerateNamespaces(PCWSTR Query, PWSTR *Namespaces, PWSTR *ErrorRecord) {
  clear(Namespaces, ErrorRecord);
  if (!Namespaces) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnEnumerateNamespaces");
  jb_wstr(&b, "query", Query);
  return finish(&b, Namespaces, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCreateNamespace(REFGUID Id, PCWSTR Settings, PHCN_NAMESPACE Namespace, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (Namespace) *Namespace = NULL;
  if (!Id || !Namespace) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnCreateNamespace");
  jb_guid(&b, "id", Id);
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, Namespace);
}

HRESULT WINAPI HcnOpenNamespace(REFGUID Id, PHCN_NAMESPACE Namespace, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (Namespace) *Namespace = NULL;
  if (!Id || !Namespace) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnOpenNamespace");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, Namespace);
}

HRESULT WINAPI HcnModifyNamespace(HCN_NAMESPACE Namespace, PCWSTR Settings, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  jbuf b;
  jb_init(&b, "HcnModifyNamespace");
  jb_u64(&b, "h", H(Namespace));
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnQueryNamespaceProperties(HCN_NAMESPACE Namespace, PCWSTR Query, PWSTR *Properties, PWSTR *ErrorRecord) {
  clear(Properties, ErrorRecord);
  if (!Properties) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnQueryNamespaceProperties");
  jb_u64(&b, "h", H(Namespace));
  jb_wstr(&b, "query", Query);
  return finish(&b, Properties, ErrorRecord, NULL);
}

HRESULT WINAPI HcnDeleteNamespace(REFGUID Id, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (!Id) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnDeleteNamespace");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCloseNamespace(HCN_NAMESPACE Namespace) {
  jbuf b;
  jb_init(&b, "HcnCloseNamespace");
  jb_u64(&b, "h", H(Namespace));
  return finish(&b, NULL, NULL, NULL);
}

/* ---- load balancers (hcsshim hcn/hcnloadbalancer.go: kube-proxy's Service load balancers) ---- */

HRESULT WINAPI HcnEnumerateLoadBalancers(PCWSTR Query, PWSTR *LoadBalancer, PWSTR *ErrorRecord) {
  clear(LoadBalancer, ErrorRecord);
  if (!LoadBalancer) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnEnumerateLoadBalancers");
  jb_wstr(&b, "query", Query);
  return finish(&b, LoadBalancer, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCreateLoadBalancer(REFGUID Id, PCWSTR Settings, PHCN_LOADBALANCER LoadBalancer, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (LoadBalancer) *LoadBalancer = NULL;
  if (!Id || !LoadBalancer) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnCreateLoadBalancer");
  jb_guid(&b, "id", Id);
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, LoadBalancer);
}

HRESULT WINAPI HcnOpenLoadBalancer(REFGUID Id, PHCN_LOADBALANCER LoadBalancer, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (LoadBalancer) *LoadBalancer = NULL;
  if (!Id || !LoadBalancer) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnOpenLoadBalancer");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, LoadBalancer);
}

HRESULT WINAPI HcnModifyLoadBalancer(HCN_LOADBALANCER LoadBalancer, PCWSTR Settings, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  jbuf b;
  jb_init(&b, "HcnModifyLoadBalancer");
  jb_u64(&b, "h", H(LoadBalancer));
  jb_wstr(&b, "settings", Settings);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnQueryLoadBalancerProperties(HCN_LOADBALANCER LoadBalancer, PCWSTR Query, PWSTR *Properties, PWSTR *ErrorRecord) {
  clear(Properties, ErrorRecord);
  if (!Properties) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnQueryLoadBalancerProperties");
  jb_u64(&b, "h", H(LoadBalancer));
  jb_wstr(&b, "query", Query);
  return finish(&b, Properties, ErrorRecord, NULL);
}

HRESULT WINAPI HcnDeleteLoadBalancer(REFGUID Id, PWSTR *ErrorRecord) {
  clear(ErrorRecord, NULL);
  if (!Id) return E_POINTER;
  jbuf b;
  jb_init(&b, "HcnDeleteLoadBalancer");
  jb_guid(&b, "id", Id);
  return finish(&b, NULL, ErrorRecord, NULL);
}

HRESULT WINAPI HcnCloseLoadBalancer(HCN_LOADBALANCER LoadBalancer) {
  jbuf b;
  jb_init(&b, "HcnCloseLoadBalancer");
  jb_u64(&b, "h", H(LoadBalancer));
  return finish(&b, NULL, NULL, NULL);
}
