#include "simlink.h"
#include <objbase.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void jb_grow(jbuf *b, size_t extra) {
  if (b->oom) return;
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *n = realloc(b->buf, cap);
  if (!n) { b->oom = 1; return; }
  b->buf = n;
  b->cap = cap;
}

static void jb_append(jbuf *b, const char *s, size_t n) {
  jb_grow(b, n);
  if (b->oom) return;
  memcpy(b->buf + b->len, s, n);
  b->len += n;
  b->buf[b->len] = 0;
}

void jb_raw(jbuf *b, const char *s) { jb_append(b, s, strlen(s)); }

void jb_init(jbuf *b, const char *fn) {
  b->buf = NULL; b->len = b->cap = 0; b->oom = 0;
  jb_raw(b, "{\"fn\":\"");
  jb_raw(b, fn);
  jb_raw(b, "\"");
}

void jb_key(jbuf *b, const char *key) {
  jb_raw(b, ",\"");
  jb_raw(b, key);
  jb_raw(b, "\":");
}

static void jb_escaped(jbuf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  jb_raw(b, "\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[7];
    if (c == '"') jb_raw(b, "\\\"");
    else if (c == '\\') jb_raw(b, "\\\\");
    else if (c == '\n') jb_raw(b, "\\n");
    else if (c == '\r') jb_raw(b, "\\r");
    else if (c == '\t') jb_raw(b, "\\t");
    else if (c < 0x20) {
      esc[0] = '\\'; esc[1] = 'u'; esc[2] = '0'; esc[3] = '0'; esc[4] = hex[c >> 4]; esc[5] = hex[c & 15]; esc[6] = 0;
      jb_raw(b, esc);
    } else jb_append(b, (const char *)&s[i], 1);
  }
  jb_raw(b, "\"");
}

void jb_str(jbuf *b, const char *key, const char *s) {
  jb_key(b, key);
  if (!s) { jb_raw(b, "null"); return; }
  jb_escaped(b, s, strlen(s));
}

void jb_wstr(jbuf *b, const char *key, PCWSTR s) {
  jb_key(b, key);
  if (!s) { jb_raw(b, "null"); return; }
  int wlen = lstrlenW(s);
  if (wlen == 0) { jb_raw(b, "\"\""); return; }
  int n = WideCharToMultiByte(CP_UTF8, 0, s, wlen, NULL, 0, NULL, NULL);
  char *u = malloc((size_t)n + 1);
  if (!u) { b->oom = 1; return; }
  WideCharToMultiByte(CP_UTF8, 0, s, wlen, u, n, NULL, NULL);
  jb_escaped(b, u, (size_t)n);
  free(u);
}

void jb_u64(jbuf *b, const char *key, unsigned long long v) {
  char num[32];
  snprintf(num, sizeof num, "%llu", v);
  jb_key(b, key);
  jb_raw(b, num);
}

void jb_i64(jbuf *b, const char *key, long long v) {
  char num[32];
  snprintf(num, sizeof num, "%lld", v);
  jb_key(b, key);
  jb_raw(b, num);
}

void jb_guid(jbuf *b, const char *key, const GUID *g) {
  char s[40];
  if (!g) { jb_key(b, key); jb_raw(b, "null"); return; }
  snprintf(s, sizeof s, "%08lX-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X", (unsigned long)g->Data1, g->Data2, g->Data3, g->Data4[0],
           g->Data4[1], g->Data4[2], g->Data4[3], g->Data4[4], g->Data4[5], g->Data4[6], g->Data4[7]);
  jb_str(b, key, s);
}

void jb_free(jbuf *b) {
  free(b->buf);
  b->buf = NULL;
}

static volatile LONG wsa_started = 0;

char *sim_call(jbuf *req) {
  char portText[16];
  DWORD got = GetEnvironmentVariableA("FLANNEL_SIM_PORT", portText, sizeof portText);
  jb_raw(req, "}\n");
  if (req->oom || got == 0 || got >= sizeof portText) return NULL;
  if (InterlockedCompareExchange(&wsa_started, 1, 0) == 0) {
    WSADATA wsa;
    if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0) { wsa_started = 0; return NULL; }
  }
  SOCKET s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET) return NULL;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((u_short)atoi(portText));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) { closesocket(s); return NULL; }
  size_t off = 0;
  while (off < req->len) {
    int n = send(s, req->buf + off, (int)(req->len - off), 0);
    if (n <= 0) { closesocket(s); return NULL; }
    off += (size_t)n;
  }
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);
  for (;;) {
    if (!out) { closesocket(s); return NULL; }
    if (len + 1024 + 1 > cap) {
      cap *= 2;
      char *n2 = realloc(out, cap);
      if (!n2) { free(out); closesocket(s); return NULL; }
      out = n2;
    }
    int n = recv(s, out + len, (int)(cap - len - 1), 0);
    if (n <= 0) break;
    len += (size_t)n;
    out[len] = 0;
    if (memchr(out + len - n, '\n', (size_t)n)) break;
  }
  closesocket(s);
  out[len] = 0;
  if (len == 0 || !strchr(out, '\n')) { free(out); return NULL; }
  return out;
}

/* `"key":` cannot occur inside a JSON string value (every quote there is escaped), so a plain search is exact. */
static const char *jr_find(const char *reply, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(reply, pat);
  return p ? p + strlen(pat) : NULL;
}

unsigned long long jr_u64(const char *reply, const char *key, unsigned long long dflt) {
  const char *p = jr_find(reply, key);
  if (!p || *p == 'n') return dflt;
  if (*p == '-') return (unsigned long long)_strtoi64(p, NULL, 10);
  return _strtoui64(p, NULL, 10);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static unsigned read_u4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p[i]);
    if (h < 0) return 0xFFFD;
    v = v * 16 + (unsigned)h;
  }
  return v;
}

static void put_utf8(char **w, unsigned cp) {
  char *o = *w;
  if (cp < 0x80) *o++ = (char)cp;
  else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) { *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F)); }
  else { *o++ = (char)(0xF0 | (cp >> 18)); *o++ = (char)(0x80 | ((cp >> 12) & 0x3F)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F)); }
  *w = o;
}

char *jr_str(const char *reply, const char *key) {
  const char *p = jr_find(reply, key);
  if (!p || *p != '"') return NULL;
  p++;
  const char *end = p;
  while (*end && *end != '"') end += (*end == '\\' && end[1]) ? 2 : 1;
  char *out = malloc((size_t)(end - p) * 2 + 1); /* escapes never grow: \uXXXX (6) -> at most 3 bytes; pairs 12 -> 4 */
  if (!out) return NULL;
  char *w = out;
  while (p < end) {
    if (*p != '\\') { *w++ = *p++; continue; }
    p++;
    switch (*p) {
      case 'n': *w++ = '\n'; p++; break;
      case 'r': *w++ = '\r'; p++; break;
      case 't': *w++ = '\t'; p++; break;
      case 'b': *w++ = '\b'; p++; break;
      case 'f': *w++ = '\f'; p++; break;
      case 'u': {
        unsigned cp = read_u4(p + 1);
        p += 5;
        if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
          unsigned lo = read_u4(p + 2);
          if (lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* lone surrogate */
        put_utf8(&w, cp);
        break;
      }
      default: *w++ = *p++; break; /* \" \\ \/ */
    }
  }
  *w = 0;
  return out;
}

PWSTR jr_wstr_cotask(const char *reply, const char *key) {
  char *u = jr_str(reply, key);
  if (!u) return NULL;
  int ulen = (int)strlen(u);
  int n = ulen ? MultiByteToWideChar(CP_UTF8, 0, u, ulen, NULL, 0) : 0;
  PWSTR w = CoTaskMemAlloc(((size_t)n + 1) * sizeof(WCHAR));
  if (w) {
    if (n) MultiByteToWideChar(CP_UTF8, 0, u, ulen, w, n);
    w[n] = 0;
  }
  free(u);
  return w;
}

int jr_u64_array(const char *reply, const char *key, unsigned long long **out) {
  const char *p = jr_find(reply, key);
  *out = NULL;
  if (!p || *p != '[') return -1;
  p++;
  int count = 0, cap = 0;
  unsigned long long *arr = NULL;
  while (*p && *p != ']') {
    while (*p == ',' || *p == ' ') p++;
    if (*p == ']') break;
    char *next;
    unsigned long long v = _strtoui64(p, &next, 10);
    if (next == p) break;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      unsigned long long *n2 = realloc(arr, (size_t)cap * sizeof *arr);
      if (!n2) { free(arr); return -1; }
      arr = n2;
    }
    arr[count++] = v;
    p = next;
  }
  *out = arr;
  return count;
}
