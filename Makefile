# Flotilla's build. Everything it needs comes from the Go module proxy; tools are built into bin/.
GO            ?= go
BIN           := $(CURDIR)/bin
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
DATA_DIR      ?= $(HOME)/.flotilla/up
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
KUBE_VERSION  := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
# The embedded Kubernetes components report the version they were built from.
KUBE_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                 -X k8s.io/component-base/version.gitMajor=$(word 2,$(subst ., ,$(subst v,v ,$(KUBE_VERSION)))) \
                 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))
GIT_COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
GIT_TREE_STATE ?= $(shell git diff --quiet HEAD 2>/dev/null && echo clean || echo dirty)
VERSION_PKG   := github.com/flotilla-io/flotilla/internal/cli/agentcmd
LDFLAGS       := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).GitCommit=$(GIT_COMMIT) \
                 -X $(VERSION_PKG).GitTreeState=$(GIT_TREE_STATE) $(KUBE_LDFLAGS)
# Unit tests are every package outside test/; test/ holds the tiers that start real control planes.
UNIT_PKGS      = $(shell $(GO) list ./... | grep -v /test/)

.PHONY: all build run generate verify check-imports check-map test-deps test test-unit test-integration test-e2e bench-smoke no-leftovers clean image image-binaries test-image release

all: build

## build: compile bin/flotilla, bin/flotilla-agent (the agent verbs alone) and bin/kubectl-flotilla (the users'
## verbs alone, a kubectl plugin), the last two without the control plane
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/flotilla ./cmd/flotilla
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/flotilla-agent ./cmd/flotilla-agent
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-flotilla ./cmd/kubectl-flotilla

## image: OCI images of flotilla and flotilla-agent (IMAGE_NAMES), built without a Docker daemon (hack/image), written
## to bin/images as docker-loadable tarballs (NAME.tar) and OCI layouts (NAME.oci), for linux/amd64 (IMAGE_ARCH=arm64 cross-builds)
IMAGE_DIR      := $(BIN)/images
IMAGE_ARCH     ?= amd64
IMAGE_NAMES    ?= flotilla flotilla-agent
IMAGE_SOURCE   ?= https://github.com/flotilla-io/flotilla
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_BIN       = $(IMAGE_DIR)/linux-$(IMAGE_ARCH)
image: image-binaries
	$(GO) run ./hack/image --out-dir $(IMAGE_DIR) --arch $(IMAGE_ARCH) --version $(VERSION) --source $(IMAGE_SOURCE) --revision $(IMAGE_REVISION) \
	  $(foreach n,$(IMAGE_NAMES),--image $(n)=$(IMAGE_BIN)/$(n))

# static_build,ARCH: go build of a static linux binary (no cgo: the images have no libc) without symbol tables,
# which the images do not need, and the same bytes every time: no build paths (-trimpath), no build ID, and
# the commit from LDFLAGS rather than from Go's VCS stamp (which would differ in a tarball of the same source),
# so the same source, Go toolchain and VERSION give the same binary wherever the tree is.
static_build = CGO_ENABLED=0 GOOS=linux GOARCH=$(1) $(GO) build -trimpath -buildvcs=false -ldflags "$(LDFLAGS) -s -w -buildid="
image-binaries:
	mkdir -p $(IMAGE_BIN)
	$(foreach n,$(IMAGE_NAMES),$(call static_build,$(IMAGE_ARCH)) -o $(IMAGE_BIN)/$(n) ./cmd/$(n) &&) true

## test-image: build the images and read them back: entrypoint, user, platform, labels, and version run from the
## binary inside; then the agent's image cross-built for linux/arm64 (make release builds the hub's too)
test-image: image
	FLOTILLA_IMAGES=$(IMAGE_DIR) FLOTILLA_IMAGE_VERSION=$(VERSION) FLOTILLA_IMAGE_ARCH=$(IMAGE_ARCH) FLOTILLA_IMAGE_NAMES="$(IMAGE_NAMES)" $(GO) test -count=1 ./hack/image
	$(MAKE) --no-print-directory image IMAGE_ARCH=arm64 IMAGE_NAMES=flotilla-agent IMAGE_DIR=$(IMAGE_DIR)/arm64
	FLOTILLA_IMAGES=$(IMAGE_DIR)/arm64 FLOTILLA_IMAGE_VERSION=$(VERSION) FLOTILLA_IMAGE_ARCH=arm64 FLOTILLA_IMAGE_NAMES=flotilla-agent $(GO) test -count=1 ./hack/image

## release: what a release publishes, in dist/: flotilla, flotilla-agent and kubectl-flotilla built as VERSION for
## linux/amd64 and linux/arm64 (NAME-VERSION-linux-ARCH), the two images per architecture tagged VERSION as the
## charts expect (images/linux-ARCH), both charts packaged with version and appVersion VERSION, kubectl-flotilla's
## archives with their krew manifest (plugin.yaml) and SHA256SUMS; every file dated SOURCE_DATE_EPOCH (the
## commit's), so the same commit and Go toolchain give the same checksums
DIST              := $(CURDIR)/dist
RELEASE_ARCHES    := amd64 arm64
RELEASE_COMMANDS  := flotilla flotilla-agent kubectl-flotilla
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
release:
	rm -rf $(DIST)
	for arch in $(RELEASE_ARCHES); do \
	  for cmd in $(RELEASE_COMMANDS); do \
	    $(call static_build,$$arch) -o $(DIST)/$$cmd-$(VERSION)-linux-$$arch ./cmd/$$cmd || exit 1; \
	  done; \
	  $(GO) run ./hack/image --out-dir $(DIST)/images/linux-$$arch --arch $$arch --version $(VERSION) --source $(IMAGE_SOURCE) \
	    --revision $(IMAGE_REVISION) --image flotilla=$(DIST)/flotilla-$(VERSION)-linux-$$arch \
	    --image flotilla-agent=$(DIST)/flotilla-agent-$(VERSION)-linux-$$arch || exit 1; \
	done
	$(GO) run ./hack/release --dist $(DIST) --version $(VERSION) --source-date-epoch $(SOURCE_DATE_EPOCH) $(addprefix --arch ,$(RELEASE_ARCHES))
	@cd $(DIST) && sha256sum -c --quiet SHA256SUMS && echo "dist/: $$(wc -l < SHA256SUMS) files, SHA256SUMS checked"

## run: the main job — a local fleet (hub + 3 members) with its data in DATA_DIR (default ~/.flotilla/up)
run: build
	$(BIN)/flotilla up --data-dir $(DATA_DIR)

$(CONTROLLER_GEN):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $(CONTROLLER_GEN)

## generate: deepcopy functions and CRD YAML from the api/ types; the charts' README.md and values.schema.json
generate: $(CONTROLLER_GEN)
	cd api && $(CONTROLLER_GEN) object paths=./... crd:crdVersions=v1 output:crd:artifacts:config=crds
	cd api && mkdir -p crds/ocm && mv crds/*.open-cluster-management.io_*.yaml crds/ocm/
	$(GO) run ./hack/chartdoc
	$(GO) run ./hack/peercrds

## verify: generated files are current, code is gofmt'ed and vetted
verify: generate
	@git diff --exit-code --stat -- api/ charts/ || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd api && $(GO) vet ./...
	@$(MAKE) -s check-imports check-map

# The layout's import rules, described in docs/architecture.md. Each rule names a package (or a binary), the
# Flotilla packages it must not reach, and why. Deps checks everything the package links, Imports only what it
# names itself (the CLI links the whole hub to run it, but must not reach into the detector for a rule).
MODULE        := github.com/flotilla-io/flotilla
DECISION_PKGS := detector scheduler override interpreter binding selection clusterset placement quota rollout
RUNTIME_PKGS  := internal/(execution|agent|controlplane|devenv|hub|cli|bench)(/[a-z]+)?
# forbid,FIELD,PACKAGE,PATTERN,WHY: fail when go list's FIELD (Deps or Imports) of PACKAGE has a Flotilla
# package matching PATTERN (a path inside the module).
forbid = bad=$$($(GO) list -f '{{join .$(1) "\n"}}' $(2) | sed -n 's|^$(MODULE)/||p' | grep -E '^($(3))$$' | sort -u | tr '\n' ' '); \
	if [ -n "$$bad" ]; then echo "$(2) must not depend on $$bad: $(4)"; exit 1; fi
# only,PACKAGE,PATTERN,WHY: fail when PACKAGE links a Flotilla package that PATTERN does not match.
only = bad=$$($(GO) list -deps $(1) | sed -n 's|^$(MODULE)/||p' | grep -vE '^($(2))$$' | sort -u | tr '\n' ' '); \
	if [ -n "$$bad" ]; then echo "$(1) must not depend on $$bad: $(3)"; exit 1; fi
# shun,PACKAGE,PATTERN,WHY: fail when PACKAGE links a package of any module whose import path matches PATTERN
# (the count and the first few are named).
shun = bad=$$($(GO) list -deps $(1) | grep -E '^($(2))'); \
	if [ -n "$$bad" ]; then echo "$(1) must not link $$(echo "$$bad" | wc -l) packages such as" \
	  $$(echo "$$bad" | sort | head -4 | tr '\n' ' ')": $(3)"; exit 1; fi
check-imports:
	@if (cd api && $(GO) list -deps ./...) | grep -q '$(MODULE)/internal'; then echo "api/ imports an internal package"; exit 1; fi
	@for p in $(DECISION_PKGS); do \
	  $(call forbid,Deps,./internal/$$p,$(RUNTIME_PKGS),decisions never talk to members or run control planes); \
	done
	@$(call forbid,Deps,./cmd/flotilla-agent,internal/(detector|binding|scheduler|rebalancer|dashboard|proxy|controlplane),the agent binary links no hub controller)
	@$(call shun,./cmd/kubectl-flotilla,k8s.io/kubernetes/|go.etcd.io/etcd/server/|helm.sh/|$(MODULE)/internal/(controlplane|hub|devenv|bench|helmchart)$$$$,the kubectl plugin is the user verbs alone: no control plane and no installer)
	@$(call only,./internal/controlplane,internal/(controlplane|logging|process),controlplane knows nothing of Flotilla; plugins come in through its Config)
	@$(call only,./internal/members,api/.*|internal/(members|scheme),the hub's controllers and the proxy share it)
	@$(call forbid,Deps,./internal/override ./internal/rebalancer,internal/detector,policy rules live in selection and names in api/work)
	@$(call forbid,Imports,./internal/cli/...,internal/detector,the CLI shows what controllers decided)
	@$(call forbid,Deps,./internal/hub,internal/agent,the hub never links a member's side)

# The map stays true: every package has its line in docs/architecture.md, and every package the map names exists.
check-map:
	@missing=$$( { $(GO) list ./...; cd api && $(GO) list ./...; } | sed -n 's|^$(MODULE)/||p' | grep -v '^test/' | \
	  while read p; do grep -q "\`$$p\`" docs/architecture.md || echo "$$p"; done | tr '\n' ' '); \
	  if [ -n "$$missing" ]; then echo "docs/architecture.md has no line for: $$missing"; exit 1; fi
	@stale=$$(grep -o '`\(internal\|api\|cmd\)/[a-z0-9/]*`' docs/architecture.md | tr -d '`' | sort -u | \
	  while read p; do [ -d "$$p" ] || echo "$$p"; done | tr '\n' ' '); \
	  if [ -n "$$stale" ]; then echo "docs/architecture.md names packages that do not exist: $$stale"; exit 1; fi

## test-deps: what the tests need beyond Go: Chromium for the dashboard's browser tests (Debian's package,
## installed with apt-get when this runs as root; otherwise those tests skip and say how to get it)
test-deps:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } || \
	  echo "Chromium is missing: the dashboard's browser tests will skip (apt-get install chromium)"

## test: every tier — verify, unit, integration, e2e, a tiny run of each benchmark — and no process left behind
test: test-deps verify test-unit test-image test-integration test-e2e bench-smoke no-leftovers

## test-unit: fast tests of pure logic, and a short run of each fuzz target
# The fuzz runs are counted in executions, not seconds: Go 1.26's fuzzer may report "context deadline exceeded"
# when a -fuzztime duration runs out while a worker is busy (go.dev/issue/75804, fixed in Go 1.27), which
# failed a CI run with no failing input.
test-unit:
	$(GO) test $(UNIT_PKGS)
	cd api && $(GO) test ./...
	$(GO) test -run '^$$' -fuzz '^FuzzApply$$' -fuzztime 10000x ./internal/override
	$(GO) test -run '^$$' -fuzz '^FuzzCluster$$' -fuzztime 50000x ./internal/selection
	$(GO) test -run '^$$' -fuzz '^FuzzEvaluate$$' -fuzztime 3000x ./internal/interpreter

## test-integration: real control planes in-process and hub processes started by the tests
test-integration:
	$(GO) test -ldflags "$(KUBE_LDFLAGS)" -timeout 20m ./test/integration/...

## test-e2e: hub and member clusters as processes of bin/flotilla (test/e2e)
test-e2e: build
	FLOTILLA_BIN=$(BIN)/flotilla $(GO) test -timeout 30m ./test/e2e/...

## bench-smoke: each benchmark at a tiny size, so the commands keep working (figures are printed, never checked)
BENCH_OUT := $(BIN)/bench-smoke
bench-smoke: build
	mkdir -p $(BENCH_OUT)
	$(BIN)/flotilla bench propagation --members 2 --objects 20 --rest 10s --out $(BENCH_OUT)/propagation.json
	$(BIN)/flotilla bench scale --clusters 2 --objects 2 --settle 10s --out $(BENCH_OUT)/scale.json
	$(BIN)/flotilla bench register --clusters 2
	$(BIN)/flotilla bench mcs --changes 2 --out $(BENCH_OUT)/mcs.json
	$(BIN)/flotilla bench dashboard --clusters 2 --templates 10 --spread 2 --requests 3 --updates 2 --baseline=false --settle 2s --out $(BENCH_OUT)/dashboard.json
	$(BIN)/flotilla bench proxy --requests 20 --out $(BENCH_OUT)/proxy.json
	$(BIN)/flotilla bench fleet-list --clusters 1,2 --objects 2 --requests 10 --out $(BENCH_OUT)/fleet-list.json
	$(BIN)/flotilla bench get-clusters --clusters 2 --requests 2 --out $(BENCH_OUT)/get-clusters.json
	$(BIN)/flotilla bench rollout --members 2 --templates 1 --changes 1 --min-success-time 1s --out $(BENCH_OUT)/rollout.json
	$(BIN)/flotilla bench addon --clusters 2 --rest 10s --out $(BENCH_OUT)/addon.json
	$(BIN)/flotilla bench failover --members 2 --objects 2 --cluster-grace-period 20s --toleration 5s --timeout 3m --out $(BENCH_OUT)/failover.json
	$(BIN)/flotilla bench plot --out-dir $(BENCH_OUT) $(BENCH_OUT)/propagation.json $(BENCH_OUT)/scale.json $(BENCH_OUT)/failover.json $(BENCH_OUT)/mcs.json

# Every process a test starts must end with it. (The brackets keep the pattern from matching this shell.)
LEFTOVERS := $(BIN)/flotill[a] |/(integration|existingcluster|e2e)\.tes[t]
no-leftovers:
	@sleep 1; if pgrep -f '$(LEFTOVERS)' >/dev/null; then echo "processes left behind:"; pgrep -af '$(LEFTOVERS)'; exit 1; fi

clean:
	rm -rf $(BIN) $(DIST)
