/* DNS_INTERFACE_SETTINGS and the iphlpapi calls that take it (netioapi.h, Windows 10 build 19041 and later),
 * which mingw-w64's netioapi.h (10.0) does not declare. Declared here as Microsoft Learn documents them
 * ("DNS_INTERFACE_SETTINGS structure (netioapi.h)", "GetInterfaceDnsSettings function",
 * "SetInterfaceDnsSettings function", "FreeInterfaceDnsSettings function"), for the stand-in iphlpapi.dll and
 * the layout probe (test/windows/probe.c), which checks src/win32/encoding.ts against this layout. A header
 * that declares them itself (the Windows SDK's, a later mingw-w64) wins: it defines DNS_INTERFACE_SETTINGS_VERSION1. */
#ifndef FLANNEL_NETIOAPI_DNS_H
#define FLANNEL_NETIOAPI_DNS_H

#include <netioapi.h>

#ifndef DNS_INTERFACE_SETTINGS_VERSION1
#define DNS_INTERFACE_SETTINGS_VERSION1 0x0001
#define DNS_SETTING_IPV6 0x0001
#define DNS_SETTING_NAMESERVER 0x0002

typedef struct _DNS_INTERFACE_SETTINGS {
  ULONG Version;
  ULONG64 Flags;
  PWSTR Domain;
  PWSTR NameServer;
  PWSTR SearchList;
  ULONG RegistrationEnabled;
  ULONG RegisterAdapterName;
  ULONG EnableLLMNR;
  ULONG QueryAdapterName;
  PWSTR ProfileNameServer;
} DNS_INTERFACE_SETTINGS;

NETIO_STATUS NETIOAPI_API_ GetInterfaceDnsSettings(GUID Interface, DNS_INTERFACE_SETTINGS *Settings);
VOID NETIOAPI_API_ FreeInterfaceDnsSettings(DNS_INTERFACE_SETTINGS *Settings);
NETIO_STATUS NETIOAPI_API_ SetInterfaceDnsSettings(GUID Interface, const DNS_INTERFACE_SETTINGS *Settings);
#endif

#endif
