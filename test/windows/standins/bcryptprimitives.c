/* ProcessPrng shim: Wine 8 has no bcryptprimitives.dll!ProcessPrng, which the ffi-rs win32 addon (Rust std) imports. */
#include <windows.h>
#define SystemFunction036 NTAPI SystemFunction036
#include <ntsecapi.h>
#undef SystemFunction036

BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData);

BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData) {
  while (cbData > 0) {
    ULONG chunk = cbData > 0x10000000 ? 0x10000000 : (ULONG)cbData;
    if (!RtlGenRandom(pbData, chunk)) return FALSE;
    pbData += chunk;
    cbData -= chunk;
  }
  return TRUE;
}
