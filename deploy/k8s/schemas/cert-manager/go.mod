// cert-manager's CustomResourceDefinitions (deploy/k8s/tools.sh). cert-manager generates them from
// its Go API types with controller-gen and commits the result to deploy/crds/ of this module;
// tools.sh takes cert-manager.io_issuers.yaml and cert-manager.io_certificates.yaml from the module
// zip the Go module proxy serves (checked against go.sum). Nothing here is built.
module jackpot.local/k8s-schemas/cert-manager

go 1.26.0

require github.com/cert-manager/cert-manager v1.21.2
