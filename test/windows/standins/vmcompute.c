/* Stand-in vmcompute.dll: HNS v1. HNSCall is undocumented (no SDK header); the prototype is hcsshim's
 * (internal/vmcompute/vmcompute.go: `//sys hnsCall(method string, path string, object string, response **uint16) (hr error) = vmcompute.HNSCall?`).
 * Every call is forwarded to the simulator; the response is CoTaskMemAlloc'd (the caller frees it with CoTaskMemFree). */
#include "simlink.h"
#include <stdlib.h>

HRESULT WINAPI HNSCall(PCWSTR method, PCWSTR path, PCWSTR request, PWSTR *response);

HRESULT WINAPI HNSCall(PCWSTR method, PCWSTR path, PCWSTR request, PWSTR *response) {
  if (response) *response = NULL;
  if (!method || !path || !response) return E_POINTER;
  jbuf b;
  jb_init(&b, "HNSCall");
  jb_wstr(&b, "method", method);
  jb_wstr(&b, "path", path);
  jb_wstr(&b, "request", request ? request : L"");
  char *reply = sim_call(&b);
  jb_free(&b);
  if (!reply) return SIM_E_TRANSPORT;
  HRESULT hr = (HRESULT)jr_u64(reply, "hr", (unsigned long long)SIM_E_TRANSPORT);
  *response = jr_wstr_cotask(reply, "out");
  free(reply);
  return hr;
}
