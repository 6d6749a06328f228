// `kubectl -n kube-system get configmap kubeadm-config kube-proxy -o yaml` on a kubeadm cluster (kubeadm
// v1.31 writes ClusterConfiguration into kubeadm-config, and the kube-proxy addon's ConfigMap holds
// config.conf and kubeconfig.conf: kubernetes cmd/kubeadm/app/phases/addons/proxy/manifests.go), trimmed
// of fields flanneld cluster-config does not read. The control-plane endpoint is a DNS name and kube-proxy's
// server its node IP, so a test can tell which one was taken.
export const KUBE_SYSTEM_CONFIGMAPS = `apiVersion: v1
items:
- apiVersion: v1
  data:
    ClusterConfiguration: |
      apiServer: {}
      apiVersion: kubeadm.k8s.io/v1beta4
      certificatesDir: /etc/kubernetes/pki
      clusterName: kubernetes
      controlPlaneEndpoint: cp.example.internal:6443
      imageRepository: registry.k8s.io
      kind: ClusterConfiguration
      kubernetesVersion: v1.31.2
      networking:
        dnsDomain: cluster.local
        podSubnet: 10.244.0.0/16
        serviceSubnet: 10.96.0.0/12
  kind: ConfigMap
  metadata:
    name: kubeadm-config
    namespace: kube-system
- apiVersion: v1
  data:
    config.conf: |-
      apiVersion: kubeproxy.config.k8s.io/v1alpha1
      clusterCIDR: 10.244.0.0/16
      kind: KubeProxyConfiguration
    kubeconfig.conf: |-
      apiVersion: v1
      kind: Config
      clusters:
      - cluster:
          certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
          server: https://10.0.0.5:6443
        name: default
      contexts:
      - context:
          cluster: default
          namespace: default
          user: default
        name: default
      current-context: default
      users:
      - name: default
        user:
          tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  kind: ConfigMap
  metadata:
    labels:
      app: kube-proxy
    name: kube-proxy
    namespace: kube-system
kind: List
metadata:
  resourceVersion: ""
`;
