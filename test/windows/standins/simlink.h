/* Shared by the stand-in DLLs: one loopback call to the simulator server (test/windows/sim-server.ts).
 * Protocol: connect to 127.0.0.1:$FLANNEL_SIM_PORT, send one JSON object + "\n", read one JSON object
 * line back, close. Requests are built with the jb_* helpers (UTF-16 arguments are converted with
 * WideCharToMultiByte and JSON-escaped); replies are flat objects whose keys are found with jr_*. */
#ifndef FLANNEL_SIMLINK_H
#define FLANNEL_SIMLINK_H

#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

typedef struct {
  char *buf;
  size_t len, cap;
  int oom;
} jbuf;

void jb_init(jbuf *b, const char *fn);
void jb_raw(jbuf *b, const char *s);
void jb_key(jbuf *b, const char *key);
/* "key":"<utf-8 of s>" (NULL -> null). */
void jb_wstr(jbuf *b, const char *key, PCWSTR s);
void jb_str(jbuf *b, const char *key, const char *s);
void jb_u64(jbuf *b, const char *key, unsigned long long v);
void jb_i64(jbuf *b, const char *key, long long v);
void jb_guid(jbuf *b, const char *key, const GUID *g);
void jb_free(jbuf *b);

/* Send the request (closing it with "}") and return the reply line (malloc'd) or NULL on transport failure. */
char *sim_call(jbuf *req);

/* Reply accessors. A missing key reads as `dflt` / NULL. */
unsigned long long jr_u64(const char *reply, const char *key, unsigned long long dflt);
/* Decode a JSON string value into a CoTaskMemAlloc'd UTF-16 string; NULL for null/missing. */
PWSTR jr_wstr_cotask(const char *reply, const char *key);
/* Decode a JSON string value into a malloc'd UTF-8 string; NULL for null/missing. */
char *jr_str(const char *reply, const char *key);
/* Parse a JSON array of integers under `key` into a malloc'd array; returns count (-1 when missing). */
int jr_u64_array(const char *reply, const char *key, unsigned long long **out);

#define SIM_E_TRANSPORT ((HRESULT)0x80004005L) /* E_FAIL when the simulator cannot be reached */

#endif
