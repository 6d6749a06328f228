<#
.SYNOPSIS
  Bootstrap flanneld-windows on a Windows node: install the CNI plugins (SHA-256 checked), write
  net-conf.json and the CNI config, install (or update) and start the flanneld service, then wait - with
  a timeout - until the agent is ready.

.DESCRIPTION
  Parameters follow the familiar microsoft/SDN and sig-windows-tools start scripts. Unlike them, this
  script never loops forever on "Waiting for the Network to be created": it polls flanneld's /readyz
  (or, with -HealthzPort 0, subnet.env) until -TimeoutSeconds and then fails with the log's location.

  CNI plugins: by default the upstream releases pinned in this build (flanneld.exe install-cni --pinned,
  with --sdnbridge for dual-stack pods); offline, pass -CniPluginSource (archives or URLs) with one
  -CniPluginSha256 each (dual-stack pods: the windows-container-networking release zip among them).

  The HNS network name: -NetworkName, else the Backend.Name of the net-conf.json already on the node (a
  node set up by microsoft/SDN has "Name": "vxlan0", and its pods and kube-proxy use that network), else
  the default (flannel.4096 / cbr0).

  Health: /healthz, /readyz and /metrics listen on -HealthzIP (default: -ManagementIP, the node IP that
  Prometheus scrapes, docs/metrics.md) port -HealthzPort (10277); -HealthzIP 127.0.0.1 keeps them on the
  node itself (the script then polls 127.0.0.1), -HealthzPort 0 turns them off.

  Run again on a node where the service runs, it applies the new flags: when the service's command line
  or net-conf.json changed it restarts the service and says so; otherwise it leaves it running.

  Dual-stack: -ClusterCIDR and -ServiceCIDR take Kubernetes' dual-stack form, "<IPv4 CIDR>,<IPv6 CIDR>" (as
  kube-controller-manager --cluster-cidr and kube-apiserver --service-cluster-ip-range take it; the
  microsoft/SDN and sig-windows-tools scripts have IPv4 forms only). With -NetworkMode l2bridge the node runs
  dual-stack (net-conf EnableIPv6 and IPv6Network, Microsoft's sdnbridge CNI plugin; Windows Server 2022 or
  newer). Overlay cannot carry IPv6 on Windows: with a dual-stack -ClusterCIDR it needs -IPv4Only, which runs
  this node IPv4-only while the cluster stays dual-stack (flanneld --ipv4-only). -PublicIPv6 names the IPv6
  address other nodes reach this node at (flanneld --public-ipv6), when the adapter's own is not the one.

  NetworkPolicy: -NetworkPolicy runs the agent with --network-policy (off by default, as flannel enforces
  none; docs/network-policy.md). Its kubeconfig's user needs the RBAC rules of deploy/base/10-rbac.yml.

.EXAMPLE
  .\start.ps1 -ManagementIP 192.168.1.20 -NetworkMode overlay -ClusterCIDR 10.244.0.0/16 `
      -ServiceCIDR 10.96.0.0/12 -KubeDnsServiceIP 10.96.0.10 -KubeConfig C:\k\config

.EXAMPLE
  .\start.ps1 -ManagementIP 192.168.1.20 -NetworkMode l2bridge -ClusterCIDR 10.244.0.0/16,fd00:10:244::/56 `
      -ServiceCIDR 10.96.0.0/12,fd00:10:96::/112 -KubeDnsServiceIP 10.96.0.10 -KubeConfig C:\k\config
#>
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string]$ManagementIP,
    [ValidateSet('l2bridge', 'overlay')][string]$NetworkMode = 'overlay',
    # [string[]]: unquoted, PowerShell reads 10.244.0.0/16,fd00:10:244::/56 as an array (a [string] would join it with a space).
    [string[]]$ClusterCIDR = @('10.244.0.0/16'),
    [string[]]$ServiceCIDR = @('10.96.0.0/12'),
    [string]$KubeDnsServiceIP = '10.96.0.10',
    [switch]$IPv4Only,
    [string]$PublicIPv6 = '',
    [switch]$NetworkPolicy,
    [string]$InterfaceName = '',
    [string]$LogDir = 'C:\k\logs\flanneld',
    [string]$KubeConfig = 'C:\k\config',
    [string]$FlanneldExe = '',
    [string]$NodeName = ([System.Net.Dns]::GetHostName()).ToLower(),
    [string]$ServiceName = 'flanneld',
    [string]$NetworkName = '',
    # The VXLAN UDP port (overlay): flanneld's default, src/subnet/net-conf-types.ts DEFAULT_VXLAN_PORT (a test
    # keeps the two equal). Another port needs HNS 10.3 (Windows Server 2022 or newer) and the same in the
    # cluster's shared net-conf.
    [ValidateRange(1, 65535)][int]$VxlanPort = 4789,
    [string]$NetConfPath = 'C:\etc\kube-flannel\net-conf.json',
    [string]$SubnetFile = 'C:\run\flannel\subnet.env',
    [string]$CniConfFile = 'C:\etc\cni\net.d\10-flannel.conflist',
    [string]$CniBinDir = 'C:\opt\cni\bin',
    [string[]]$CniPluginSource = @(),
    [string[]]$CniPluginSha256 = @(),
    [string]$HealthzIP = '',
    [int]$HealthzPort = 10277,
    [int]$TimeoutSeconds = 180
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
if (-not $FlanneldExe) {
    # In the release zip this script is in scripts\ and flanneld.exe one level up; beside it also works.
    $FlanneldExe = Join-Path $PSScriptRoot 'flanneld.exe'
    if (-not (Test-Path $FlanneldExe)) { $FlanneldExe = Join-Path (Split-Path $PSScriptRoot -Parent) 'flanneld.exe' }
}

function Invoke-Flanneld {
    param([string[]]$Arguments)
    & $FlanneldExe @Arguments
    if ($LASTEXITCODE -ne 0) {
        throw "flanneld $($Arguments[0]) failed with exit code $LASTEXITCODE"
    }
}

if (-not (Test-Path -LiteralPath $FlanneldExe)) {
    throw "flanneld.exe not found at $FlanneldExe; pass -FlanneldExe"
}
if (-not (Test-Path -LiteralPath $KubeConfig)) {
    throw "kubeconfig not found at $KubeConfig; pass -KubeConfig"
}

# -ClusterCIDR / -ServiceCIDR: "<IPv4 CIDR>" or Kubernetes' dual-stack "<IPv4 CIDR>,<IPv6 CIDR>" (an array
# when unquoted, one string when quoted).
function Split-DualStackCidr {
    param([string[]]$Value, [string]$Name)
    $parts = @($Value | ForEach-Object { $_ -split ',' } | ForEach-Object { $_.Trim() } | Where-Object { $_ -ne '' })
    $v4 = @($parts | Where-Object { $_ -notmatch ':' })
    $v6 = @($parts | Where-Object { $_ -match ':' })
    if ($v4.Count -ne 1 -or $v6.Count -gt 1) {
        throw "-$Name takes an IPv4 CIDR, or an IPv4 and an IPv6 CIDR separated by a comma (dual-stack, e.g. 10.244.0.0/16,fd00:10:244::/56); got '$($Value -join ',')'"
    }
    $ipv6 = if ($v6.Count -eq 1) { $v6[0] } else { '' }
    return @{ IPv4 = $v4[0]; IPv6 = $ipv6 }
}
$clusterCidrs = Split-DualStackCidr $ClusterCIDR 'ClusterCIDR'
$serviceCidrs = Split-DualStackCidr $ServiceCIDR 'ServiceCIDR'
$dualStack = $clusterCidrs.IPv6 -ne ''
if ($dualStack -and $NetworkMode -eq 'overlay' -and -not $IPv4Only) {
    throw ("-NetworkMode overlay cannot carry IPv6 on Windows, and -ClusterCIDR $($ClusterCIDR -join ',') is dual-stack: pass -IPv4Only " +
        "to run this node IPv4-only in the dual-stack cluster (its pods get IPv4 addresses only), or use -NetworkMode l2bridge for dual-stack")
}
# The node's own pods are dual-stack only on l2bridge without -IPv4Only; the cluster's net-conf stays dual-stack either way.
$podsDualStack = $dualStack -and -not $IPv4Only

# net-conf.json: VNI 4096 and -VxlanPort are what Windows needs (and what Linux nodes must be told too).
if ($NetworkMode -eq 'overlay') {
    $backend = [ordered]@{ Type = 'vxlan'; VNI = 4096; Port = $VxlanPort }
    Write-Host "VXLAN on UDP port ${VxlanPort}: every node must accept inbound UDP $VxlanPort from the other nodes (Windows Firewall, cloud security groups)"
} else {
    $backend = [ordered]@{ Type = 'host-gw' }
}
# Keep the network name the node already uses: rewriting net-conf.json without it would make flanneld look
# for flannel.4096 while the pods and kube-proxy are on vxlan0.
$oldNetConf = ''
if (Test-Path -LiteralPath $NetConfPath) {
    $oldNetConf = [System.IO.File]::ReadAllText($NetConfPath)
}
if (-not $NetworkName -and $oldNetConf) {
    try {
        $old = $oldNetConf | ConvertFrom-Json
        $oldBackend = $old.PSObject.Properties['Backend']
        # Only for the same backend type: a -NetworkMode change (vxlan0 to host-gw) gets the new type's default name.
        $oldType = if ($oldBackend -and $oldBackend.Value.PSObject.Properties['Type']) { [string]$oldBackend.Value.Type } else { '' }
        if ($oldBackend -and $oldBackend.Value.PSObject.Properties['Name'] -and $oldType -ceq $backend['Type']) {
            $NetworkName = [string]$oldBackend.Value.Name
            Write-Host "Keeping Backend.Name $NetworkName from $NetConfPath (the HNS network the pods and kube-proxy use)"
        }
    } catch {
        Write-Warning "Could not read the existing $NetConfPath ($($_.Exception.Message)); writing a new one"
    }
}
if ($NetworkName) {
    $backend['Name'] = $NetworkName
}
# Dual-stack as the Linux nodes' kube-flannel-cfg says it (upstream's keys: EnableIPv6, IPv6Network).
$netConfFields = [ordered]@{ Network = $clusterCidrs.IPv4 }
if ($dualStack) {
    $netConfFields['EnableIPv6'] = $true
    $netConfFields['IPv6Network'] = $clusterCidrs.IPv6
}
$netConfFields['Backend'] = $backend
$netConf = $netConfFields | ConvertTo-Json -Depth 4
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $NetConfPath) | Out-Null
# UTF-8 without a byte order mark (Set-Content -Encoding UTF8 would add one on Windows PowerShell 5).
[System.IO.File]::WriteAllText($NetConfPath, $netConf)
# -cne: a case-only change (a Backend.Name vxlan0 to VXLAN0) is a change for flanneld.
$netConfChanged = $oldNetConf -cne $netConf
Write-Host "Wrote $NetConfPath ($NetworkMode)"

# The health server listens on the node IP by default, so Prometheus reaches /metrics (docs/metrics.md).
if ($HealthzIP -eq '') { $HealthzIP = $ManagementIP }
# The readiness poll below goes where the agent listens; 0.0.0.0 also answers on the loopback.
$healthzHost = if ($HealthzIP -eq '0.0.0.0') { '127.0.0.1' } else { $HealthzIP }

$iface = $ManagementIP
if ($InterfaceName -ne '') {
    $iface = $InterfaceName
}
$agentArgs = @(
    '--kube-subnet-mgr',
    "--kubeconfig-file=$KubeConfig",
    "--net-config-path=$NetConfPath",
    "--subnet-file=$SubnetFile",
    "--iface=$iface",
    '--ip-masq',
    "--healthz-ip=$HealthzIP",
    "--healthz-port=$HealthzPort",
    # Readiness covers the CNI config containerd loads first from this directory, and its plugins.
    "--cni-conf-dir=$(Split-Path -Parent $CniConfFile)",
    "--cni-bin-dir=$CniBinDir"
)
if ($NetworkPolicy) { $agentArgs += '--network-policy' }
# The flags cni-config shares with the agent (the same net-conf is read the same way).
$familyArgs = @()
if ($IPv4Only) { $familyArgs += '--ipv4-only' }
if ($PublicIPv6) { $familyArgs += "--public-ipv6=$PublicIPv6" }
$agentArgs += $familyArgs
$cniConfigArgs = @('cni-config', "--net-config-path=$NetConfPath", "--subnet-file=$SubnetFile", "--management-ip=$ManagementIP",
    "--service-cidr=$($serviceCidrs.IPv4)", "--dns-server=$KubeDnsServiceIP", '-o', $CniConfFile) + $familyArgs
if ($podsDualStack -and $serviceCidrs.IPv6) { $cniConfigArgs += "--ipv6-service-cidr=$($serviceCidrs.IPv6)" }

# CNI plugins (flannel.exe, win-overlay.exe, win-bridge.exe, host-local.exe; sdnbridge.exe too for
# dual-stack pods, whose conflist runs it): hashed before anything is written; a node that already has the
# same files is left alone.
$pluginArgs = @('install-cni', "--bin-dir=$CniBinDir")
if ($podsDualStack) { $pluginArgs += '--sdnbridge' }
if ($CniPluginSource.Count -eq 0) {
    $pluginArgs += '--pinned'
} else {
    if ($CniPluginSource.Count -ne $CniPluginSha256.Count) {
        throw "give one -CniPluginSha256 per -CniPluginSource ($($CniPluginSource.Count) sources, $($CniPluginSha256.Count) hashes)"
    }
    for ($i = 0; $i -lt $CniPluginSource.Count; $i++) {
        $pluginArgs += @('--source', $CniPluginSource[$i], '--sha256', $CniPluginSha256[$i])
    }
}
Invoke-Flanneld $pluginArgs

# --subnet-file: the conflist names the agent's subnet.env (the flannel plugin's default is /run/flannel/subnet.env).
# The dual-stack conflist (sdnbridge) names the node's subnets from subnet.env, which the agent writes: it is
# rendered once the agent has (below).
if (-not $podsDualStack) {
    Invoke-Flanneld $cniConfigArgs
}

# The service as flanneld-service.exe reports it (`state:`, `binary-path:` lines); $null when not installed.
function Get-FlanneldService {
    $out = & $FlanneldExe service status --name $ServiceName 2>$null
    if ($LASTEXITCODE -ne 0) {
        return $null
    }
    $fields = @{}
    foreach ($line in @($out)) {
        if ([string]$line -match '^([a-z-]+): (.*)$') {
            $fields[$Matches[1]] = $Matches[2]
        }
    }
    return $fields
}

# Install (or update) the service with these flags, then start it. A service that already runs keeps the
# flags it started with until it restarts: restart it when its command line or net-conf.json changed.
$before = Get-FlanneldService
Invoke-Flanneld (@('service', 'install', '--name', $ServiceName, '--log-dir', $LogDir, '--env', "NODE_NAME=$NodeName", '--') + $agentArgs)
$after = Get-FlanneldService
if ($before -and $before['state'] -eq 'RUNNING') {
    $flagsChanged = (-not $after) -or ($before['binary-path'] -cne $after['binary-path'])
    if ($flagsChanged -or $netConfChanged) {
        $what = @()
        if ($flagsChanged) { $what += 'its flags' }
        if ($netConfChanged) { $what += 'net-conf.json' }
        Write-Host "Restarting service $ServiceName to apply the new $($what -join ' and ')"
        Invoke-Flanneld @('service', 'stop', '--name', $ServiceName, '--timeout', '60')
    } else {
        Write-Host "Service $ServiceName already runs with these flags and this net-conf.json; not restarted"
    }
}
$serviceStartedAt = [DateTime]::UtcNow
Invoke-Flanneld @('service', 'start', '--name', $ServiceName, '--timeout', '60')

# The conflist must name the HNS network the agent runs. Without Backend.Name in net-conf.json the agent may
# adopt the network that already holds the node's subnet (microsoft/SDN's vxlan0): it records the network in
# boot.json beside subnet.env once it is up, and cni-config names the one recorded there. Wait for this
# start's record (bounded), then write the conflist again.
$bootRecord = Join-Path (Split-Path -Parent $SubnetFile) 'boot.json'
$deadline = [DateTime]::UtcNow.AddSeconds($TimeoutSeconds)
$agentNetwork = ''
while ($true) {
    if ((Test-Path -LiteralPath $bootRecord) -and ((Get-Item -LiteralPath $bootRecord).LastWriteTimeUtc -ge $serviceStartedAt.AddSeconds(-2))) {
        try {
            $record = [System.IO.File]::ReadAllText($bootRecord) | ConvertFrom-Json
            $recordNetwork = $record.PSObject.Properties['network']
            if ($recordNetwork -and $recordNetwork.Value.PSObject.Properties['name']) {
                $agentNetwork = [string]$recordNetwork.Value.name
            }
        } catch {
            $agentNetwork = ''
        }
    }
    if ($agentNetwork) {
        break
    }
    if ([DateTime]::UtcNow -ge $deadline) {
        throw ("flanneld did not record its HNS network in $bootRecord within $TimeoutSeconds s. " +
            "See $LogDir\$ServiceName.log and 'flanneld.exe service status --name $ServiceName'.")
    }
    Start-Sleep -Seconds 2
}
Invoke-Flanneld $cniConfigArgs
Write-Host "The CNI config names HNS network $agentNetwork, the one flanneld runs"

# Wait for readiness, bounded.
$deadline = [DateTime]::UtcNow.AddSeconds($TimeoutSeconds)
$lastError = 'no answer yet'
while ($true) {
    if ($HealthzPort -gt 0) {
        try {
            $r = Invoke-WebRequest -UseBasicParsing -TimeoutSec 5 -Uri "http://${healthzHost}:$HealthzPort/readyz"
            if ($r.StatusCode -eq 200) {
                break
            }
            $lastError = "readyz answered $($r.StatusCode)"
        } catch {
            $lastError = $_.Exception.Message
        }
    } elseif ((Test-Path -LiteralPath $SubnetFile) -and (Select-String -Quiet -Pattern '^FLANNEL_SUBNET=' -LiteralPath $SubnetFile)) {
        break
    }
    if ([DateTime]::UtcNow -ge $deadline) {
        throw ("flanneld did not become ready within $TimeoutSeconds s ($lastError). " +
            "See $LogDir\$ServiceName.log and 'flanneld.exe service status --name $ServiceName'.")
    }
    Start-Sleep -Seconds 2
}
Write-Host "flanneld is ready: $(Get-Content -LiteralPath $SubnetFile -Raw)"

# Dual-stack (EnableIPv6 in net-conf.json): the kubelet and kube-proxy need settings of their own, and a Node
# with an InternalIP of one family only stays single-stack. 'flanneld status' prints both, and a warning.
if ((Select-String -Quiet -Pattern '^FLANNEL_IPV6_SUBNET=' -LiteralPath $SubnetFile) -and $HealthzPort -gt 0) {
    Write-Host 'Dual-stack node: start the kubelet and kube-proxy with the settings below (kubelet, kube-proxy rows).'
    # Informational: a status that is not yet in sync (peers still being programmed) does not fail the script.
    & $FlanneldExe status "--healthz-port=$HealthzPort"
}
