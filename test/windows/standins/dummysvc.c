/*
 * A Windows service that does nothing but run: the stand-in for hns and kube-proxy under Wine's service
 * control manager (test/windows/hns-restart-service.test.ts). It registers with
 * StartServiceCtrlDispatcherW, reports SERVICE_RUNNING, accepts SERVICE_CONTROL_STOP and reports
 * SERVICE_STOPPED (winsvc.h; learn.microsoft.com "Writing a ServiceMain Function"). Each start and stop
 * appends "start <pid>" / "stop <pid>" to the file named by its first command-line argument, so a test
 * sees it was restarted in a new process.
 */
#include <windows.h>
#include <stdio.h>

static SERVICE_STATUS_HANDLE status_handle;
static SERVICE_STATUS status;
static HANDLE stop_event;
static const wchar_t *record_path;

static void record(const char *what)
{
    FILE *f;
    if (!record_path) return;
    f = _wfopen(record_path, L"a");
    if (!f) return;
    fprintf(f, "%s %lu\n", what, (unsigned long)GetCurrentProcessId());
    fclose(f);
}

static DWORD WINAPI handler(DWORD control, DWORD type, LPVOID data, LPVOID context)
{
    (void)type;
    (void)data;
    (void)context;
    if (control == SERVICE_CONTROL_STOP || control == SERVICE_CONTROL_SHUTDOWN) {
        status.dwCurrentState = SERVICE_STOP_PENDING;
        SetServiceStatus(status_handle, &status);
        SetEvent(stop_event);
        return NO_ERROR;
    }
    return control == SERVICE_CONTROL_INTERROGATE ? NO_ERROR : ERROR_CALL_NOT_IMPLEMENTED;
}

static void WINAPI service_main(DWORD argc, LPWSTR *argv)
{
    (void)argc;
    status_handle = RegisterServiceCtrlHandlerExW(argv[0], handler, NULL);
    if (!status_handle) return;
    stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
    status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    status.dwControlsAccepted = SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN;
    status.dwCurrentState = SERVICE_RUNNING;
    SetServiceStatus(status_handle, &status);
    record("start");
    WaitForSingleObject(stop_event, INFINITE);
    record("stop");
    status.dwCurrentState = SERVICE_STOPPED;
    SetServiceStatus(status_handle, &status);
}

int wmain(int argc, wchar_t **argv)
{
    SERVICE_TABLE_ENTRYW table[] = {{(LPWSTR)L"", service_main}, {NULL, NULL}};
    record_path = argc > 1 ? argv[1] : NULL;
    return StartServiceCtrlDispatcherW(table) ? 0 : 1;
}
