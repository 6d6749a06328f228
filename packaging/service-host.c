/*
 * flanneld-service.exe: the Windows service host of flanneld-windows, built with mingw-w64 by
 * packaging/build.mjs and shipped in flanneld-windows-amd64.zip beside flanneld.exe.
 *
 * Two roles, one small program on the Win32 service APIs (advapi32):
 *
 *   management (called by `flanneld.exe service ...`, or by hand):
 *     flanneld-service.exe install   --name N [--display-name D] --exe PATH --log-dir DIR
 *                                    [--log-max-mb M] [--log-keep K] [--env NAME=VALUE]...
 *                                    -- <agent flags>
 *     flanneld-service.exe uninstall --name N [--timeout S]
 *     flanneld-service.exe start     --name N [--timeout S]
 *     flanneld-service.exe stop      --name N [--timeout S]
 *     flanneld-service.exe status    --name N
 *   `install` registers an auto-start LocalSystem service whose binary path is
 *     "<this exe>" run --name N --exe PATH --log-dir DIR --log-max-mb M --log-keep K [--env ...] -- <agent flags>
 *   (--env pairs are set in the agent's environment).
 *   with recovery actions restart after 5 s / 10 s / 30 s, reset after one day, and the
 *   failure-actions-on-non-crash-failures flag (so an agent that exits non-zero is restarted).
 *   Installing over an existing service updates its binary path and settings.
 *
 *   service (started by the SCM):
 *     flanneld-service.exe run ...   StartServiceCtrlDispatcherW, then starts PATH with the agent
 *     flags, its stdout/stderr through a pipe into DIR\<name>.log (rotated at M MiB, K old files
 *     kept: <name>.log.1 is the newest). SCM stop/shutdown is forwarded as a console Ctrl+C (the
 *     agent stops gracefully on SIGINT); an agent still running 10 s later is terminated. An agent
 *     that exits on its own is reported as a service failure (ERROR_SERVICE_SPECIFIC_ERROR with its
 *     exit code), so the SCM recovery actions apply.
 *
 * Exit codes of the management verbs: 0 ok, 1 Win32 error (message printed), 2 usage, 3 service not
 * installed, 4 timed out waiting for a state.
 */
#ifndef UNICODE
#define UNICODE
#endif
#ifndef _UNICODE
#define _UNICODE
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define STOP_GRACE_MS 10000
#define DEFAULT_TIMEOUT_S 30
#define MAX_CMDLINE 32767

/* ------------------------------------------------------------------ output */

/* UTF-8 output (msvcrt's wprintf writes UTF-16 to a redirected file). Formats use %ls for strings. */
static void uprintf(FILE *f, const wchar_t *fmt, ...) {
    static wchar_t wbuf[MAX_CMDLINE * 2];
    static char buf[MAX_CMDLINE * 6];
    va_list ap;
    va_start(ap, fmt);
    int n = _vsnwprintf(wbuf, MAX_CMDLINE * 2 - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = MAX_CMDLINE * 2 - 1;
    wbuf[n] = 0;
    int len = WideCharToMultiByte(CP_UTF8, 0, wbuf, n, buf, (int)sizeof(buf), NULL, NULL);
    if (len > 0) fwrite(buf, 1, (size_t)len, f);
    fflush(f);
}
#define wprintf(...) uprintf(stdout, __VA_ARGS__)
#define fwprintf(f, ...) uprintf(f, __VA_ARGS__)

/* ------------------------------------------------------------------ options */

typedef struct {
    const wchar_t *verb;
    const wchar_t *name;
    const wchar_t *display_name;
    const wchar_t *exe;
    const wchar_t *log_dir;
    DWORD log_max_mb;
    DWORD log_keep;
    DWORD timeout_s;
    int env_count;
    const wchar_t *env[64];
    int agent_argc;
    wchar_t **agent_argv;
} Options;

static Options opt;

static void usage(void) {
    fwprintf(stderr,
             L"usage: flanneld-service.exe install --name N [--display-name D] --exe PATH --log-dir DIR [--log-max-mb M] [--log-keep K] -- <agent flags>\n"
             L"                                    [--env NAME=VALUE]...\n"
             L"       flanneld-service.exe uninstall|start|stop|status --name N [--timeout S]\n"
             L"       flanneld-service.exe run ... (started by the service control manager)\n");
}

static int parse_dword(const wchar_t *s, DWORD *out) {
    wchar_t *end = NULL;
    unsigned long v = wcstoul(s, &end, 10);
    if (!s[0] || (end && *end)) return 0;
    *out = (DWORD)v;
    return 1;
}

static int parse_options(int argc, wchar_t **argv) {
    if (argc < 2) return 0;
    opt.verb = argv[1];
    opt.name = L"flanneld";
    opt.log_max_mb = 10;
    opt.log_keep = 5;
    opt.timeout_s = DEFAULT_TIMEOUT_S;
    for (int i = 2; i < argc; i++) {
        const wchar_t *a = argv[i];
        if (wcscmp(a, L"--") == 0) {
            opt.agent_argc = argc - i - 1;
            opt.agent_argv = argv + i + 1;
            return 1;
        }
        if (i + 1 >= argc) {
            fwprintf(stderr, L"flanneld-service: %ls needs a value\n", a);
            return 0;
        }
        const wchar_t *v = argv[++i];
        if (wcscmp(a, L"--name") == 0) opt.name = v;
        else if (wcscmp(a, L"--display-name") == 0) opt.display_name = v;
        else if (wcscmp(a, L"--exe") == 0) opt.exe = v;
        else if (wcscmp(a, L"--log-dir") == 0) opt.log_dir = v;
        else if (wcscmp(a, L"--log-max-mb") == 0) { if (!parse_dword(v, &opt.log_max_mb) || opt.log_max_mb == 0) return 0; }
        else if (wcscmp(a, L"--log-keep") == 0) { if (!parse_dword(v, &opt.log_keep)) return 0; }
        else if (wcscmp(a, L"--timeout") == 0) { if (!parse_dword(v, &opt.timeout_s)) return 0; }
        else if (wcscmp(a, L"--env") == 0) {
            if (opt.env_count >= 64 || !wcschr(v, L'=') || v[0] == L'=') {
                fwprintf(stderr, L"flanneld-service: bad --env %ls (NAME=VALUE, at most 64)\n", v);
                return 0;
            }
            opt.env[opt.env_count++] = v;
        }
        else {
            fwprintf(stderr, L"flanneld-service: unknown option %ls\n", a);
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ command lines */

/* Append `arg` to `buf` quoted by the CommandLineToArgvW rules. Returns 0 when it does not fit. */
static int append_arg(wchar_t *buf, size_t cap, const wchar_t *arg) {
    size_t n = wcslen(buf);
    int need_quotes = arg[0] == 0 || wcspbrk(arg, L" \t\n\v\"") != NULL;
#define PUT(c) do { if (n + 2 >= cap) return 0; buf[n++] = (c); } while (0)
    if (n > 0) PUT(L' ');
    if (!need_quotes) {
        for (const wchar_t *p = arg; *p; p++) PUT(*p);
    } else {
        PUT(L'"');
        for (const wchar_t *p = arg;; p++) {
            size_t backslashes = 0;
            while (*p == L'\\') { p++; backslashes++; }
            if (*p == 0) {
                for (size_t k = 0; k < backslashes * 2; k++) PUT(L'\\');
                break;
            } else if (*p == L'"') {
                for (size_t k = 0; k < backslashes * 2 + 1; k++) PUT(L'\\');
                PUT(L'"');
            } else {
                for (size_t k = 0; k < backslashes; k++) PUT(L'\\');
                PUT(*p);
            }
        }
        PUT(L'"');
    }
    buf[n] = 0;
    return 1;
#undef PUT
}

static int append_agent_args(wchar_t *buf, size_t cap) {
    for (int i = 0; i < opt.agent_argc; i++)
        if (!append_arg(buf, cap, opt.agent_argv[i])) return 0;
    return 1;
}

/* ------------------------------------------------------------------ errors */

static void print_error(const wchar_t *what, DWORD err) {
    wchar_t msg[512] = L"";
    FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err, 0, msg, 512, NULL);
    size_t n = wcslen(msg);
    while (n > 0 && (msg[n - 1] == L'\r' || msg[n - 1] == L'\n' || msg[n - 1] == L' ')) msg[--n] = 0;
    fwprintf(stderr, L"flanneld-service: %ls failed: error %lu%ls%ls\n", what, (unsigned long)err, n ? L": " : L"", msg);
}

/* ------------------------------------------------------------------ management */

static const wchar_t *state_name(DWORD s) {
    switch (s) {
    case SERVICE_STOPPED: return L"STOPPED";
    case SERVICE_START_PENDING: return L"START_PENDING";
    case SERVICE_STOP_PENDING: return L"STOP_PENDING";
    case SERVICE_RUNNING: return L"RUNNING";
    case SERVICE_CONTINUE_PENDING: return L"CONTINUE_PENDING";
    case SERVICE_PAUSE_PENDING: return L"PAUSE_PENDING";
    case SERVICE_PAUSED: return L"PAUSED";
    default: return L"UNKNOWN";
    }
}

static SC_HANDLE open_scm(DWORD access) {
    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, access);
    if (!scm) print_error(L"OpenSCManagerW", GetLastError());
    return scm;
}

/* Open the service; returns NULL and sets *rc (3 = not installed, 1 = other error). */
static SC_HANDLE open_service(SC_HANDLE scm, DWORD access, int *rc) {
    SC_HANDLE svc = OpenServiceW(scm, opt.name, access);
    if (!svc) {
        DWORD err = GetLastError();
        if (err == ERROR_SERVICE_DOES_NOT_EXIST) {
            fwprintf(stderr, L"flanneld-service: service %ls is not installed\n", opt.name);
            *rc = 3;
        } else {
            print_error(L"OpenServiceW", err);
            *rc = 1;
        }
    }
    return svc;
}

static int query(SC_HANDLE svc, SERVICE_STATUS_PROCESS *st) {
    DWORD needed = 0;
    if (!QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (LPBYTE)st, sizeof(*st), &needed)) {
        print_error(L"QueryServiceStatusEx", GetLastError());
        return 0;
    }
    return 1;
}

/* Poll until the service reaches `want`; returns 0 ok, 1 error, 4 timeout. */
static int wait_state(SC_HANDLE svc, DWORD want, DWORD timeout_s) {
    ULONGLONG deadline = GetTickCount64() + (ULONGLONG)timeout_s * 1000;
    SERVICE_STATUS_PROCESS st;
    for (;;) {
        if (!query(svc, &st)) return 1;
        if (st.dwCurrentState == want) return 0;
        if (want == SERVICE_RUNNING && st.dwCurrentState == SERVICE_STOPPED) {
            fwprintf(stderr, L"flanneld-service: service %ls stopped while starting (exit code %lu, service-specific %lu); see its log\n", opt.name,
                     (unsigned long)st.dwWin32ExitCode, (unsigned long)st.dwServiceSpecificExitCode);
            return 1;
        }
        if (GetTickCount64() > deadline) {
            fwprintf(stderr, L"flanneld-service: timed out after %lu s waiting for %ls to be %ls (it is %ls)\n", (unsigned long)timeout_s, opt.name,
                     state_name(want), state_name(st.dwCurrentState));
            return 4;
        }
        Sleep(200);
    }
}

static int set_recovery(SC_HANDLE svc) {
    int rc = 0;
    SERVICE_DESCRIPTIONW desc;
    desc.lpDescription = L"flanneld-windows: the flannel node network agent (HNS host-gw / vxlan) for Kubernetes";
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_DESCRIPTION, &desc)) {
        print_error(L"ChangeServiceConfig2W(SERVICE_CONFIG_DESCRIPTION)", GetLastError());
        rc = 1;
    }
    SC_ACTION actions[3] = {{SC_ACTION_RESTART, 5000}, {SC_ACTION_RESTART, 10000}, {SC_ACTION_RESTART, 30000}};
    SERVICE_FAILURE_ACTIONSW fa;
    memset(&fa, 0, sizeof(fa));
    fa.dwResetPeriod = 86400;
    fa.lpRebootMsg = NULL;
    fa.lpCommand = NULL;
    fa.cActions = 3;
    fa.lpsaActions = actions;
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS, &fa)) {
        print_error(L"ChangeServiceConfig2W(SERVICE_CONFIG_FAILURE_ACTIONS)", GetLastError());
        rc = 1;
    }
    SERVICE_FAILURE_ACTIONS_FLAG flag;
    flag.fFailureActionsOnNonCrashFailures = TRUE;
    if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, &flag)) {
        DWORD err = GetLastError();
        if (err == ERROR_INVALID_LEVEL) {
            /* Windows Vista and later support it; Wine's service control manager does not */
            fwprintf(stderr, L"flanneld-service: warning: this service control manager does not support SERVICE_CONFIG_FAILURE_ACTIONS_FLAG "
                             L"(error 124): only crashes, not non-zero exits, trigger the recovery actions\n");
        } else {
            print_error(L"ChangeServiceConfig2W(SERVICE_CONFIG_FAILURE_ACTIONS_FLAG)", err);
            rc = 1;
        }
    }
    return rc;
}

static int cmd_install(void) {
    if (!opt.exe || !opt.log_dir) {
        fwprintf(stderr, L"flanneld-service: install needs --exe and --log-dir\n");
        return 2;
    }
    static wchar_t self[MAX_PATH + 1];
    DWORD n = GetModuleFileNameW(NULL, self, MAX_PATH);
    if (n == 0 || n >= MAX_PATH) {
        print_error(L"GetModuleFileNameW", GetLastError());
        return 1;
    }
    static wchar_t bin[MAX_CMDLINE];
    wchar_t num[2][16];
    swprintf(num[0], 16, L"%lu", (unsigned long)opt.log_max_mb);
    swprintf(num[1], 16, L"%lu", (unsigned long)opt.log_keep);
    bin[0] = 0;
    const wchar_t *parts[] = {self, L"run", L"--name", opt.name, L"--exe", opt.exe, L"--log-dir", opt.log_dir, L"--log-max-mb", num[0], L"--log-keep", num[1]};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        /* the SCM needs the program path quoted whenever it holds a space */
        if (!append_arg(bin, MAX_CMDLINE, parts[i])) goto too_long;
    }
    for (int i = 0; i < opt.env_count; i++)
        if (!append_arg(bin, MAX_CMDLINE, L"--env") || !append_arg(bin, MAX_CMDLINE, opt.env[i])) goto too_long;
    if (!append_arg(bin, MAX_CMDLINE, L"--")) goto too_long;
    if (!append_agent_args(bin, MAX_CMDLINE)) goto too_long;

    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT | SC_MANAGER_CREATE_SERVICE);
    if (!scm) return 1;
    const wchar_t *display = opt.display_name ? opt.display_name : opt.name;
    int rc = 0;
    SC_HANDLE svc = CreateServiceW(scm, opt.name, display, SERVICE_ALL_ACCESS, SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START, SERVICE_ERROR_NORMAL, bin,
                                   NULL, NULL, NULL, NULL /* LocalSystem */, NULL);
    if (svc) {
        wprintf(L"installed service %ls\n", opt.name);
    } else if (GetLastError() == ERROR_SERVICE_EXISTS) {
        svc = OpenServiceW(scm, opt.name, SERVICE_ALL_ACCESS);
        if (!svc) {
            print_error(L"OpenServiceW", GetLastError());
            CloseServiceHandle(scm);
            return 1;
        }
        if (!ChangeServiceConfigW(svc, SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START, SERVICE_ERROR_NORMAL, bin, NULL, NULL, NULL, NULL, NULL, display)) {
            print_error(L"ChangeServiceConfigW", GetLastError());
            rc = 1;
        } else {
            wprintf(L"updated service %ls (restart it to apply)\n", opt.name);
        }
    } else {
        print_error(L"CreateServiceW", GetLastError());
        CloseServiceHandle(scm);
        return 1;
    }
    if (rc == 0) rc = set_recovery(svc);
    if (rc == 0) wprintf(L"binary path: %ls\n", bin);
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    return rc;
too_long:
    fwprintf(stderr, L"flanneld-service: the service command line is longer than %d characters\n", MAX_CMDLINE);
    return 2;
}

static int stop_service(SC_HANDLE svc) {
    SERVICE_STATUS_PROCESS st;
    if (!query(svc, &st)) return 1;
    if (st.dwCurrentState == SERVICE_STOPPED) return 0;
    if (st.dwCurrentState != SERVICE_STOP_PENDING) {
        SERVICE_STATUS ss;
        if (!ControlService(svc, SERVICE_CONTROL_STOP, &ss)) {
            DWORD err = GetLastError();
            if (err != ERROR_SERVICE_NOT_ACTIVE) {
                print_error(L"ControlService(SERVICE_CONTROL_STOP)", err);
                return 1;
            }
        }
    }
    return wait_state(svc, SERVICE_STOPPED, opt.timeout_s);
}

static int cmd_uninstall(void) {
    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT);
    if (!scm) return 1;
    int rc = 0;
    SC_HANDLE svc = open_service(scm, SERVICE_STOP | SERVICE_QUERY_STATUS | DELETE, &rc);
    if (svc) {
        rc = stop_service(svc);
        if (rc == 0) {
            if (DeleteService(svc)) {
                wprintf(L"uninstalled service %ls\n", opt.name);
            } else {
                print_error(L"DeleteService", GetLastError());
                rc = 1;
            }
        }
        CloseServiceHandle(svc);
    }
    CloseServiceHandle(scm);
    return rc;
}

static int cmd_start(void) {
    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT);
    if (!scm) return 1;
    int rc = 0;
    SC_HANDLE svc = open_service(scm, SERVICE_START | SERVICE_QUERY_STATUS, &rc);
    if (svc) {
        if (!StartServiceW(svc, 0, NULL) && GetLastError() != ERROR_SERVICE_ALREADY_RUNNING) {
            print_error(L"StartServiceW", GetLastError());
            rc = 1;
        } else {
            rc = wait_state(svc, SERVICE_RUNNING, opt.timeout_s);
            if (rc == 0) wprintf(L"service %ls is RUNNING\n", opt.name);
        }
        CloseServiceHandle(svc);
    }
    CloseServiceHandle(scm);
    return rc;
}

static int cmd_stop(void) {
    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT);
    if (!scm) return 1;
    int rc = 0;
    SC_HANDLE svc = open_service(scm, SERVICE_STOP | SERVICE_QUERY_STATUS, &rc);
    if (svc) {
        rc = stop_service(svc);
        if (rc == 0) wprintf(L"service %ls is STOPPED\n", opt.name);
        CloseServiceHandle(svc);
    }
    CloseServiceHandle(scm);
    return rc;
}

static int cmd_status(void) {
    SC_HANDLE scm = open_scm(SC_MANAGER_CONNECT);
    if (!scm) return 1;
    int rc = 0;
    SC_HANDLE svc = open_service(scm, SERVICE_QUERY_STATUS | SERVICE_QUERY_CONFIG, &rc);
    if (!svc) {
        CloseServiceHandle(scm);
        return rc;
    }
    SERVICE_STATUS_PROCESS st;
    if (query(svc, &st)) {
        wprintf(L"name: %ls\nstate: %ls\npid: %lu\nexit-code: %lu\nservice-exit-code: %lu\n", opt.name, state_name(st.dwCurrentState),
                (unsigned long)st.dwProcessId, (unsigned long)st.dwWin32ExitCode, (unsigned long)st.dwServiceSpecificExitCode);
    } else {
        rc = 1;
    }
    static BYTE buf[65536];
    DWORD needed = 0;
    if (QueryServiceConfigW(svc, (QUERY_SERVICE_CONFIGW *)buf, sizeof(buf), &needed)) {
        QUERY_SERVICE_CONFIGW *c = (QUERY_SERVICE_CONFIGW *)buf;
        const wchar_t *start = c->dwStartType == SERVICE_AUTO_START ? L"auto" : c->dwStartType == SERVICE_DEMAND_START ? L"demand"
                             : c->dwStartType == SERVICE_DISABLED ? L"disabled" : L"other";
        wprintf(L"start-type: %ls\naccount: %ls\nbinary-path: %ls\n", start, c->lpServiceStartName ? c->lpServiceStartName : L"", c->lpBinaryPathName);
    } else {
        print_error(L"QueryServiceConfigW", GetLastError());
        rc = 1;
    }
    if (QueryServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS, buf, sizeof(buf), &needed)) {
        SERVICE_FAILURE_ACTIONSW *fa = (SERVICE_FAILURE_ACTIONSW *)buf;
        wprintf(L"failure-reset-seconds: %lu\nfailure-actions:", (unsigned long)fa->dwResetPeriod);
        for (DWORD i = 0; i < fa->cActions && fa->lpsaActions; i++) {
            const wchar_t *t = fa->lpsaActions[i].Type == SC_ACTION_RESTART ? L"restart" : fa->lpsaActions[i].Type == SC_ACTION_NONE ? L"none" : L"other";
            wprintf(L" %ls/%lu", t, (unsigned long)fa->lpsaActions[i].Delay);
        }
        wprintf(L"\n");
    } else {
        wprintf(L"failure-actions: unavailable (error %lu)\n", (unsigned long)GetLastError());
    }
    if (QueryServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, buf, sizeof(buf), &needed)) {
        wprintf(L"failure-actions-on-non-crash-failures: %ls\n", ((SERVICE_FAILURE_ACTIONS_FLAG *)buf)->fFailureActionsOnNonCrashFailures ? L"true" : L"false");
    } else {
        wprintf(L"failure-actions-on-non-crash-failures: unavailable (error %lu)\n", (unsigned long)GetLastError());
    }
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    return rc;
}

/* ------------------------------------------------------------------ the rotating log */

static CRITICAL_SECTION log_lock;
static HANDLE log_file = INVALID_HANDLE_VALUE;
static ULONGLONG log_size;
static wchar_t log_path[MAX_PATH * 2];

static void make_dirs(const wchar_t *dir) {
    wchar_t tmp[MAX_PATH * 2];
    wcsncpy(tmp, dir, MAX_PATH * 2 - 1);
    tmp[MAX_PATH * 2 - 1] = 0;
    for (wchar_t *p = tmp; *p; p++) {
        if ((*p == L'\\' || *p == L'/') && p > tmp && p[-1] != L':') {
            wchar_t c = *p;
            *p = 0;
            CreateDirectoryW(tmp, NULL);
            *p = c;
        }
    }
    CreateDirectoryW(tmp, NULL);
}

static void log_open(void) {
    log_file = CreateFileW(log_path, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    LARGE_INTEGER sz;
    log_size = (log_file != INVALID_HANDLE_VALUE && GetFileSizeEx(log_file, &sz)) ? (ULONGLONG)sz.QuadPart : 0;
}

/* <name>.log -> <name>.log.1 -> ... -> <name>.log.K (dropped). Called with log_lock held. */
static void log_rotate(void) {
    if (log_file != INVALID_HANDLE_VALUE) CloseHandle(log_file);
    wchar_t from[MAX_PATH * 2 + 8], to[MAX_PATH * 2 + 8];
    if (opt.log_keep == 0) {
        DeleteFileW(log_path);
    } else {
        swprintf(to, MAX_PATH * 2 + 8, L"%ls.%lu", log_path, (unsigned long)opt.log_keep);
        DeleteFileW(to);
        for (DWORD i = opt.log_keep; i > 1; i--) {
            swprintf(from, MAX_PATH * 2 + 8, L"%ls.%lu", log_path, (unsigned long)(i - 1));
            swprintf(to, MAX_PATH * 2 + 8, L"%ls.%lu", log_path, (unsigned long)i);
            MoveFileExW(from, to, MOVEFILE_REPLACE_EXISTING);
        }
        swprintf(to, MAX_PATH * 2 + 8, L"%ls.1", log_path);
        MoveFileExW(log_path, to, MOVEFILE_REPLACE_EXISTING);
    }
    log_open();
}

static void log_write(const char *data, DWORD len) {
    EnterCriticalSection(&log_lock);
    if (log_size + len > (ULONGLONG)opt.log_max_mb * 1024 * 1024 && log_size > 0) log_rotate();
    if (log_file != INVALID_HANDLE_VALUE) {
        DWORD written = 0;
        WriteFile(log_file, data, len, &written, NULL);
        log_size += written;
    }
    LeaveCriticalSection(&log_lock);
}

/* The host's own lines, in the agent's text format: <ISO time> <level> flanneld-service: <msg>. */
static void host_log(const char *level, const char *fmt, ...) {
    char line[2048];
    SYSTEMTIME t;
    GetSystemTime(&t);
    int n = snprintf(line, sizeof(line), "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ %s flanneld-service: ", t.wYear, t.wMonth, t.wDay, t.wHour, t.wMinute,
                     t.wSecond, t.wMilliseconds, level);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - n - 3, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 3) n = sizeof(line) - 3;
    line[n++] = '\r';
    line[n++] = '\n';
    log_write(line, (DWORD)n);
}

static DWORD WINAPI pipe_reader(LPVOID arg) {
    HANDLE pipe = (HANDLE)arg;
    char buf[8192];
    DWORD got = 0;
    while (ReadFile(pipe, buf, sizeof(buf), &got, NULL) && got > 0) log_write(buf, got);
    CloseHandle(pipe);
    return 0;
}

/* ------------------------------------------------------------------ the service */

static SERVICE_STATUS_HANDLE status_handle;
static SERVICE_STATUS status;
static HANDLE stop_event;
static volatile LONG stop_reason; /* 0 none, SERVICE_CONTROL_STOP or SERVICE_CONTROL_SHUTDOWN */

static void report(DWORD state, DWORD win32_exit, DWORD specific_exit, DWORD wait_hint) {
    static DWORD checkpoint = 1;
    status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    status.dwCurrentState = state;
    status.dwControlsAccepted = state == SERVICE_RUNNING ? SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN : 0;
    status.dwWin32ExitCode = win32_exit;
    status.dwServiceSpecificExitCode = specific_exit;
    status.dwWaitHint = wait_hint;
    status.dwCheckPoint = (state == SERVICE_RUNNING || state == SERVICE_STOPPED) ? 0 : checkpoint++;
    SetServiceStatus(status_handle, &status);
}

static DWORD WINAPI ctrl_handler(DWORD control, DWORD type, LPVOID data, LPVOID ctx) {
    (void)type;
    (void)data;
    (void)ctx;
    switch (control) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
        InterlockedCompareExchange(&stop_reason, (LONG)control, 0);
        report(SERVICE_STOP_PENDING, NO_ERROR, 0, STOP_GRACE_MS + 5000);
        SetEvent(stop_event);
        return NO_ERROR;
    case SERVICE_CONTROL_INTERROGATE:
        return NO_ERROR;
    default:
        return ERROR_CALL_NOT_IMPLEMENTED;
    }
}

/* The host ignores the Ctrl+C it sends to its console (a handler is not inherited by the agent). */
static BOOL WINAPI console_handler(DWORD type) {
    (void)type;
    return TRUE;
}

static void WINAPI service_main(DWORD argc, LPWSTR *argv) {
    (void)argc;
    (void)argv;
    status_handle = RegisterServiceCtrlHandlerExW(opt.name, ctrl_handler, NULL);
    if (!status_handle) return;
    stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
    report(SERVICE_START_PENDING, NO_ERROR, 0, 10000);

    make_dirs(opt.log_dir);
    swprintf(log_path, MAX_PATH * 2, L"%ls\\%ls.log", opt.log_dir, opt.name);
    log_open();
    if (log_file == INVALID_HANDLE_VALUE) {
        report(SERVICE_STOPPED, GetLastError(), 0, 0);
        return;
    }

    /* A console shared with the agent, so that a stop can be delivered as Ctrl+C (SIGINT in Node). */
    AllocConsole();
    SetConsoleCtrlHandler(console_handler, TRUE);

    static wchar_t cmd[MAX_CMDLINE];
    cmd[0] = 0;
    if (!append_arg(cmd, MAX_CMDLINE, opt.exe) || !append_agent_args(cmd, MAX_CMDLINE)) {
        host_log("error", "the agent command line is too long");
        report(SERVICE_STOPPED, ERROR_INVALID_PARAMETER, 0, 0);
        return;
    }

    for (int i = 0; i < opt.env_count; i++) {
        static wchar_t kv[MAX_CMDLINE];
        wcsncpy(kv, opt.env[i], MAX_CMDLINE - 1);
        kv[MAX_CMDLINE - 1] = 0;
        wchar_t *eq = wcschr(kv, L'=');
        *eq = 0;
        SetEnvironmentVariableW(kv, eq + 1);
    }

    SECURITY_ATTRIBUTES sa = {sizeof(sa), NULL, TRUE};
    HANDLE rd = NULL, wr = NULL;
    if (!CreatePipe(&rd, &wr, &sa, 0)) {
        DWORD err = GetLastError();
        host_log("error", "CreatePipe failed: %lu", (unsigned long)err);
        report(SERVICE_STOPPED, err, 0, 0);
        return;
    }
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
    HANDLE nul = CreateFileW(L"NUL", GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa, OPEN_EXISTING, 0, NULL);

    STARTUPINFOW si;
    memset(&si, 0, sizeof(si));
    si.cb = sizeof(si);
    si.dwFlags = STARTF_USESTDHANDLES | STARTF_USESHOWWINDOW;
    si.wShowWindow = SW_HIDE;
    si.hStdInput = nul;
    si.hStdOutput = wr;
    si.hStdError = wr;
    PROCESS_INFORMATION pi;
    memset(&pi, 0, sizeof(pi));
    host_log("info", "starting %ls", cmd);
    if (!CreateProcessW(opt.exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
        DWORD err = GetLastError();
        host_log("error", "cannot start %ls: error %lu", opt.exe, (unsigned long)err);
        CloseHandle(wr);
        CloseHandle(rd);
        report(SERVICE_STOPPED, err, 0, 0);
        return;
    }
    CloseHandle(wr);
    if (nul != INVALID_HANDLE_VALUE) CloseHandle(nul);
    CloseHandle(pi.hThread);
    HANDLE reader = CreateThread(NULL, 0, pipe_reader, rd, 0, NULL);
    host_log("info", "agent started (pid %lu)", (unsigned long)pi.dwProcessId);
    report(SERVICE_RUNNING, NO_ERROR, 0, 0);

    HANDLE waits[2] = {pi.hProcess, stop_event};
    DWORD w = WaitForMultipleObjects(2, waits, FALSE, INFINITE);
    DWORD code = 0;
    if (w == WAIT_OBJECT_0 + 1) {
        host_log("info", "%s requested: sending Ctrl+C to the agent (pid %lu)", stop_reason == SERVICE_CONTROL_SHUTDOWN ? "shutdown" : "stop",
                 (unsigned long)pi.dwProcessId);
        if (!GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0)) host_log("warn", "GenerateConsoleCtrlEvent failed: %lu", (unsigned long)GetLastError());
        DWORD waited = 0;
        while (waited < STOP_GRACE_MS && WaitForSingleObject(pi.hProcess, 1000) == WAIT_TIMEOUT) {
            waited += 1000;
            report(SERVICE_STOP_PENDING, NO_ERROR, 0, STOP_GRACE_MS + 5000);
        }
        if (WaitForSingleObject(pi.hProcess, 0) == WAIT_TIMEOUT) {
            host_log("warn", "the agent did not stop within %d s: terminating it", STOP_GRACE_MS / 1000);
            TerminateProcess(pi.hProcess, 1);
            WaitForSingleObject(pi.hProcess, 5000);
        }
        GetExitCodeProcess(pi.hProcess, &code);
        if (reader) WaitForSingleObject(reader, 2000);
        host_log("info", "agent stopped (exit code %lu)", (unsigned long)code);
        CloseHandle(pi.hProcess);
        report(SERVICE_STOPPED, NO_ERROR, 0, 0);
    } else {
        GetExitCodeProcess(pi.hProcess, &code);
        if (reader) WaitForSingleObject(reader, 2000);
        host_log("error", "the agent exited on its own (exit code %lu): reporting a service failure", (unsigned long)code);
        CloseHandle(pi.hProcess);
        /* a non-zero exit code makes the SCM apply the recovery actions (non-crash failure flag) */
        if (code == 0) report(SERVICE_STOPPED, ERROR_PROCESS_ABORTED, 0, 0);
        else report(SERVICE_STOPPED, ERROR_SERVICE_SPECIFIC_ERROR, code, 0);
    }
}

static int cmd_run(void) {
    if (!opt.exe || !opt.log_dir) {
        fwprintf(stderr, L"flanneld-service: run needs --exe and --log-dir\n");
        return 2;
    }
    InitializeCriticalSection(&log_lock);
    SERVICE_TABLE_ENTRYW table[2] = {{(LPWSTR)opt.name, service_main}, {NULL, NULL}};
    if (!StartServiceCtrlDispatcherW(table)) {
        DWORD err = GetLastError();
        if (err == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT)
            fwprintf(stderr, L"flanneld-service: `run` is started by the service control manager; use `flanneld.exe service start`\n");
        else print_error(L"StartServiceCtrlDispatcherW", err);
        return 1;
    }
    return 0;
}

int wmain(int argc, wchar_t **argv) {
    if (!parse_options(argc, argv)) {
        usage();
        return 2;
    }
    if (wcscmp(opt.verb, L"install") == 0) return cmd_install();
    if (wcscmp(opt.verb, L"uninstall") == 0) return cmd_uninstall();
    if (wcscmp(opt.verb, L"start") == 0) return cmd_start();
    if (wcscmp(opt.verb, L"stop") == 0) return cmd_stop();
    if (wcscmp(opt.verb, L"status") == 0) return cmd_status();
    if (wcscmp(opt.verb, L"run") == 0) return cmd_run();
    usage();
    return 2;
}
