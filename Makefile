# tpkit — build, test, benchmark and demo. `make help` lists the targets.
GO      ?= go
BIN     ?= bin
CMDS    := $(notdir $(wildcard cmd/*))
PKGS    ?= ./...
# Keep `make test` well inside CI's budget on 2 cores.
TEST_TIMEOUT ?= 14m
BENCHTIME    ?= 1s
# The version every build stamps into the programs (--version, the images'
# tags): git describe --tags --always --dirty (hack/version.sh).
VERSION ?= $(shell ./hack/version.sh)
LDFLAGS = -X github.com/tpkit-dev/tpkit/internal/cliflag.version=$(VERSION)

.PHONY: all help build test test-tools vet fmt-check unit bench bench-dns bench-nodecache bench-udp bench-memory bench-scale bench-generate bench-failover bench-origin bench-hollow-proxy bench-node bench-fleet check-layout check-arktos arktos-src arktos-patch check-arktos-node check-faketp-arktos check-arktos-cluster cluster-up cluster-down cluster-status check-cluster check-conformance check-deploy demo fuzz clean

all: build

help:
	@echo "make demo       build, start 3 fake TPs and partition-dns, print real answers (Ctrl-C stops)"
	@echo "make build      build every program in cmd/ into $(BIN)/ (make all, the default, is the same)"
	@echo "make images IMAGE_DIR=DIR  the container images as OCI archives DIR/<program>.oci.tar, tagged tpkit/<program>:<version> (hack/images.sh)"
	@echo "make test       gofmt check, every test with the race detector and all vet checks"
	@echo "make test-tools install what the tests need from Debian's packages when missing (hack/ensure-tools.sh; part of make test)"
	@echo "make fmt-check  gofmt -l of every tracked Go file (part of make test)"
	@echo "make unit       every test with -race and -vet=all, without the tools and gofmt steps (PKGS=./pkg/... for fewer)"
	@echo "make vet        go vet of PKGS (make test vets through go test -vet=all)"
	@echo "make bench      Go benchmarks of the hot paths (figures: docs/benchmarks.md)"
	@echo "make bench-dns  partition-dns load run: dnsperf against 3 TPs x 10k services, ratio to a canned floor"
	@echo "make bench-nodecache  node-cache -> partition-dns QPS with and without EDNS Client Subnet"
	@echo "make bench-udp  partition-dns's batched UDP path against udpfloor -batch 32 (test/bench/udp/udpfloor): QPS and CPU per query"
	@echo "make bench-memory  partition-dns start-up memory (peak, steady, ready time) with and without paged lists"
	@echo "make bench-scale  partition-dns over 10 TPs at 60k, 300k and 600k objects in a 170 MiB cgroup, and 60k and 1.5M of fake-tp --generate's shape (1.5M in 340 MiB): ready, RSS, bytes per object, programming latency under churn, QPS"
	@echo "make bench-generate  fake-tp --generate 125000 over 10 TPs (1.64M objects): time to ready, CPU, peak RSS"
	@echo "make bench-flood  cluster-name QPS alone and under a forward flood, partition-dns and CoreDNS in one run, with the UDP floor alone"
	@echo "make bench-origin  the kubelet's TP-origin file under pod churn: Flush p50/p99/max at 10 replacements/s, file size after 36,000 (DIRS, DURATION, REPLACEMENTS)"
	@echo "make bench-failover  NodeLocal HA switch: failover time and lost queries (root, netns)"
	@echo "make bench-hollow-proxy ARKTOS_BIN=WORK/bin  kubemark's hollow proxy (patch 0030) over 2 fake TPs at 1.5k and 9k services each: first rules, a new service, peak RSS (root, netns)"
	@echo "make bench-node ARKTOS_BIN=STOCK PATCHED_BIN=WORK/bin  stock vs patched Arktos kube-proxy over 3 fake TPs at 1.5k, 9k, 30k services: first complete rules, a new endpoint, RSS, per mode (root, netns)"
	@echo "make bench-fleet ARKTOS_BIN=STOCK PATCHED_BIN=WORK/bin IMAGE_DIR=DIR  HOLLOW=100 hollow nodes on make cluster-up's cluster, stock then patched (ORDER='patched stock' the other way; RUNS=K pairs, the order turned round each time, with each ratio's median): each partition's API server load (requests by verb, watches, bytes, CPU, RSS), per hollow node CPU and RSS, pod start-up p50/p99, as patched/stock ratios (root)"
	@echo "make soak SOAK=30m  partition-dns for SOAK over 3 TPs x 100k objects, 500 changes/s and dnsperf; fails on RSS or goroutine growth or a wrong answer"
	@echo "make check-layout  the folders' rules: pkg/ holds what programs and cores need, no arrow from pkg/ into testbed/, no export only its own tests use (hack/layout)"
	@echo "make check-arktos ARKTOS_BIN=DIR  the Arktos checks against two real Arktos TPs (hack/arktos-lab.sh; make arktos-src STOCK_BIN=DIR builds the binaries)"
	@echo "make arktos-src ARKTOS_GIT=URL-or-DIR SRC=DIR [STOCK_BIN=DIR]  Arktos 6685f14's source prepared for arktos-patch in SRC (restored files, reflect2 v1.0.2, generated openapi), and with STOCK_BIN the stock binaries (hack/arktos-src.sh)"
	@echo "make arktos-patch ARKTOS_SRC=DIR WORK=DIR  Arktos with tpkit: copy the tree, vendor the cores, apply arktos/patches, test, build WORK/bin, run Arktos's quick checks on both trees (docs/vendoring.md)"
	@echo "make check-arktos-node ARKTOS_BIN=WORK/bin  the node lab: patched (or stock) hollow-node and kube-proxy against real TPs, in a network namespace"
	@echo "make check-faketp-arktos ARKTOS_BIN=DIR  stock (or patched) kube-proxy and hollow-node start against fake-tp's TPs, in a network namespace (about 6 min)"
	@echo "make check-deploy ARKTOS_BIN=DIR  kubectl apply --dry-run=server of deploy/ against a real Arktos TP and kube-apiserver $(KUBE_VERSION) (built once)"
	@echo "make check-arktos-cluster ARKTOS_BIN=WORK/bin IMAGE_DIR=DIR  the cluster lab: the patched kubelet on dockerd, kube-proxy, partition-dns and the node cache deployed from deploy/, a tenant pod resolving (root)"
	@echo "make cluster-up ARKTOS_BIN=WORK/bin IMAGE_DIR=DIR  a scale-out cluster on this machine: the resource partition, tp1, tp2, two real nodes, tpkit deployed; prints its kubeconfigs (root; docs/local-cluster.md)"
	@echo "make cluster-down  stop the local cluster and remove all it made on the host"
	@echo "make check-cluster ARKTOS_BIN=WORK/bin IMAGE_DIR=DIR  cluster-up, the cross-node checks (test/local-cluster), cluster-down (root)"
	@echo "make check-conformance ARKTOS_BIN=WORK/bin  Kubernetes's DNS and Services e2e specs from Arktos's tree against the running cluster-up, through tp1 and tp2: JUnit and a table (root; docs/conformance.md)"
	@echo "make cluster-status  what runs in the local cluster, and its kubeconfigs"
	@echo "make fuzz       run each fuzz target for FUZZTIME (default 20s)"
	@echo "make clean      remove $(BIN)/"
	@echo "make help       this list"

# -buildvcs=auto: --version names the commit even where GOFLAGS turns VCS
# stamping off (as on these build machines); -ldflags: and the version.
build:
	@mkdir -p $(BIN)
	@for c in $(CMDS); do echo "go build -buildvcs=auto -ldflags '$(LDFLAGS)' -o $(BIN)/$$c ./cmd/$$c"; $(GO) build -buildvcs=auto -ldflags '$(LDFLAGS)' -o $(BIN)/$$c ./cmd/$$c || exit 1; done

# The container images, built without any registry (hack/images.sh; README.md,
# "Images"): DIR/<program>.oci.tar, tagged tpkit/<program>:<version>.
.PHONY: images
images:
	@test -n "$(IMAGE_DIR)" || { echo "set IMAGE_DIR to the folder that receives the image archives"; exit 2; }
	VERSION='$(VERSION)' ./hack/images.sh $(IMAGE_DIR)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# go test -vet=all vets every package it lists, those without a test file
# too (they are built and vetted, then reported as [no test files]), so make
# test needs no go vet of its own: one would vet the standard library and
# every dependency again, as go vet's flags differ from go test's and the
# two share no vet result (14 s after a cold run).
#
# -p 3 on two cores: several test binaries spend most of their run waiting
# on timers in other processes (the NodeLocal switch, idle webhook
# connections, reflector back-off), and a third slot keeps the compiler busy
# meanwhile. A cold run (GOCACHE=$(mktemp -d) make test, 2 cores): 6m14s
# with the default -p 2, 5m42s with 3, 5m55s with 4.
#
# go test starts the test binaries in the order of its packages, and builds
# what the first need first. TEST_FIRST are the longest runs, so that they
# overlap the compiles of the rest instead of running alone at the end
# (testbed/faketp's 40 s once ran last, on one core; pkg/tporigin and
# test/vendorable, 12-19 s each, started at 318 s and 340 s of 353 s);
# cmd/fake-tp leads, as its TestMain starts the static build of the
# programs that test/hostile, test/multi-tp and test/images then share. A
# package listed twice runs once. Cold runs in fresh clones, 2 cores:
# 6m32s-7m04s before this order; 5m51s-6m24s (638-698 CPU-s) with it, the
# cores' language build on the race build and test/hostile's idle clients
# outside the race detector; 5m36s and 5m38s (614 and 623 CPU-s) once make
# test also dropped its own go vet, ran hack/layout inside go test and
# started pkg/tporigin and test/vendorable early. The machine's speed moves
# a run by about 30 s.
TEST_FIRST := ./cmd/fake-tp ./testbed/faketp ./test/hostile ./pkg/nodelocal ./test/images ./test/multi-tp ./pkg/tporigin ./test/vendorable
unit:
	$(GO) test -race -vet=all -p 3 -timeout $(TEST_TIMEOUT) $(if $(filter ./...,$(PKGS)),$(TEST_FIRST)) $(PKGS)

# What the tests need, installed from Debian's packages when missing (as
# root; otherwise ensure-tools says what to install), so that on a fresh
# machine with Go, `make test` is the whole set-up: iptables and ip (rules in
# network namespaces), dig and dnsperf, Go 1.19 (test/vendorable's oldest
# toolchain), podman and the image tools (test/images), and kubectl (the
# kubectl compatibility tests, which must not be skipped).
TEST_TOOLS := iptables ip dig dnsperf go1.19 podman runc buildah mmdebstrap newuidmap python3 kubectl
test-tools:
	./hack/ensure-tools.sh $(TEST_TOOLS)

test: test-tools fmt-check unit

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

# fake-tp --generate at the scale benchmark's size: time to ready, CPU and
# peak RSS (docs/benchmarks.md, "fake-tp --generate"); GENERATE, TPS and
# FAKE_TP (a binary to measure instead of this checkout's) change it.
bench-generate:
	GENERATE=$${GENERATE:-125000} TPS=$${TPS:-10} ./test/bench/generate/run.sh $(FAKE_TP)

# Whole-program load run (docs/benchmarks.md, "partition-dns").
bench-dns:
	./hack/ensure-tools.sh dnsperf dig
	ROUNDS=$${ROUNDS:-3} DURATION=$${DURATION:-15} ./test/bench/dns/run.sh

# node-cache → partition-dns with and without EDNS Client Subnet (docs/benchmarks.md, "client subnet").
bench-nodecache:
	./hack/ensure-tools.sh dnsperf dig
	ROUNDS=$${ROUNDS:-3} DURATION=$${DURATION:-10} ./test/bench/nodecache/run.sh

# partition-dns's UDP path against udpfloor -batch 32 (docs/benchmarks.md, "batched UDP").
bench-udp:
	./hack/ensure-tools.sh dnsperf
	ROUNDS=$${ROUNDS:-3} DURATION=$${DURATION:-10} ./test/bench/udp/run.sh

# Start-up memory with and without paged lists (docs/benchmarks.md, "Start-up memory").
bench-memory:
	SERVICES=$${SERVICES:-72000} PODS=$${PODS:-72000} ./test/bench/memory/run.sh

# partition-dns over 10 fake TPs at 60k, 300k and 600k objects, the sizes' QPS
# rounds in turn (docs/benchmarks.md, "Scale").
bench-scale:
	./hack/ensure-tools.sh dnsperf
	SIZES="$${SIZES:-2400 12000 24000 500:5000:10 12500:125000:10}" MEMCG_MIB="$${MEMCG_MIB:-170 170 170 170 340}" CHANGES=$${CHANGES:-500} DURATION=$${DURATION:-21} ROUNDS=$${ROUNDS:-3} ./test/bench/scale/run.sh

# Cluster names under a forward flood, partition-dns and CoreDNS in one run
# (docs/benchmarks.md, "Forward flood"); CoreDNS is built once into ~/.cache/tpkit.
# TPS=2: two fake TPs hold kube-dns, so that partition-dns answers it at TTL 0
# to the unknown source (docs/benchmarks.md, "System names from an unknown source").
.PHONY: bench-flood
bench-flood:
	./hack/ensure-tools.sh dnsperf curl
	ROUNDS=$${ROUNDS:-3} DURATION=$${DURATION:-10} ./test/bench/flood/run.sh

# partition-dns for SOAK under churn and a steady dnsperf load, sampled every
# minute; fails when RSS or goroutines grow by more than 5 % after
# SOAK_WARMUP, or on any wrong answer (docs/benchmarks.md, "Soak"). Not in
# make test.
SOAK ?= 30m
SOAK_WARMUP ?= 5m
.PHONY: soak
soak:
	./hack/ensure-tools.sh dnsperf curl
	SOAK=$(SOAK) SOAK_WARMUP=$(SOAK_WARMUP) ./test/bench/soak/run.sh

# The kubelet's TP-origin file (pkg/tporigin) under pod churn, on each of
# DIRS' filesystems with real fsyncs: Flush latency at 10 replacements/s
# for DURATION, then the file's size after REPLACEMENTS (36,000: an hour
# at 10/s) (docs/benchmarks.md, "TP-origin file under churn"). Fails when
# the file grows past 4x its live data.
DIRS ?= /tmp /var/tmp /dev/shm
bench-origin:
	$(GO) build -o $(BIN)/bench-origin ./test/bench/origin
	set -e; for d in $(DIRS); do \
	  test -d $$d || continue; \
	  $(BIN)/bench-origin --dir $$d --duration $${DURATION:-60s} --replacements $${REPLACEMENTS:-36000}; \
	done

# The NodeLocal HA switch in a network namespace, three runs (docs/benchmarks.md, "nodelocal").
bench-failover:
	./hack/ensure-tools.sh iptables ip dig
	$(GO) test -count=3 -run TestNodeLocalHASwitch -v ./pkg/nodelocal/ | grep RESULT

# kubemark's hollow proxy (patch 0030) over TPS fake TPs of each size in
# SIZES (services per TP), in a network namespace (docs/benchmarks.md,
# "hollow proxy"). ARKTOS_BIN is WORK/bin of make arktos-patch.
bench-hollow-proxy:
	@test -n "$(ARKTOS_BIN)" || { echo "set ARKTOS_BIN to WORK/bin of make arktos-patch"; exit 2; }
	SIZES="$${SIZES:-1500 9000}" TPS=$${TPS:-2} ./test/bench/hollowproxy/run.sh $(abspath $(ARKTOS_BIN))

# Stock and patched Arktos kube-proxy against the same fake TPs, each in a
# network namespace of its own, per mode (proxy mode / iptables backend),
# at SIZES services over TPS TPs (docs/benchmarks.md, "Node: stock vs
# patched kube-proxy"); each wait is capped at TIMEOUT seconds. Root.
# A hollow fleet on the local scale-out cluster, stock then patched (issue
# 49): what the series costs each partition's API server.
bench-fleet:
	@test -n "$(ARKTOS_BIN)" -a -n "$(PATCHED_BIN)" -a -n "$(IMAGE_DIR)" || { echo "set ARKTOS_BIN to stock Arktos binaries, PATCHED_BIN to WORK/bin of make arktos-patch and IMAGE_DIR to the folder of make images"; exit 2; }
	./test/bench/fleet/run.sh $(abspath $(ARKTOS_BIN)) $(abspath $(PATCHED_BIN)) $(abspath $(IMAGE_DIR))

bench-node:
	@test -n "$(ARKTOS_BIN)" -a -n "$(PATCHED_BIN)" || { echo "set ARKTOS_BIN to stock Arktos binaries and PATCHED_BIN to WORK/bin of make arktos-patch"; exit 2; }
	./hack/ensure-tools.sh iptables ip curl
	ARKTOS_BIN=$(abspath $(ARKTOS_BIN)) PATCHED_BIN=$(abspath $(PATCHED_BIN)) ./test/bench/node/run.sh

# The folders' rules (docs/architecture.md, "Layout"): pkg/ only what the
# programs and the cores need, internal/ only what programs use, no import
# from pkg/ into testbed/ or test/, no export only its own tests use. make
# test runs the same check as hack/layout's test, inside go test (a go run
# of its own compiled the standard library a third time, 16 s alone before
# the tests).
check-layout:
	$(GO) run ./hack/layout

# TestArktosTPs and TestArktosRestarts (each API server restarted 10 times,
# once over a compacted etcd; about 4 minutes) against two real Arktos TPs
# started by hack/arktos-lab.sh (make test runs both against fake-tp).
# ARKTOS_BIN: Arktos's kube-apiserver.
check-arktos:
	@test -n "$(ARKTOS_BIN)" || { echo "set ARKTOS_BIN to the folder holding Arktos's kube-apiserver (make arktos-src STOCK_BIN=DIR builds one)"; exit 2; }
	ARKTOS_BIN=$(abspath $(ARKTOS_BIN)) $(GO) test -count=1 -v -timeout 20m -run 'TestArktosTPs|TestArktosRestarts' ./test/multi-tp/

# Arktos's source for arktos-patch (hack/arktos-src.sh): commit 6685f14 from
# ARKTOS_GIT (a git URL, or a clone or bare git dir) into SRC, which must be
# new or empty; the two files some copies lack from the Go module proxy,
# reflect2 v1.0.2 (Go 1.18 and later need it) and the generated openapi file.
# STOCK_BIN: also build the stock binaries there (kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy, kubectl, kubelet,
# hollow-node). A SRC prepared before goes straight to that build. 16m09s
# here on 2 cores with STOCK_BIN, the build most of it.
arktos-src:
	@test -n "$(ARKTOS_GIT)" -a -n "$(SRC)" || { echo "set ARKTOS_GIT to a git URL or clone holding Arktos 6685f14 and SRC to a new folder (STOCK_BIN: a folder for the stock binaries)"; exit 2; }
	./hack/arktos-src.sh "$(ARKTOS_GIT)" $(abspath $(SRC)) $(if $(STOCK_BIN),$(abspath $(STOCK_BIN)))

# Arktos with tpkit (docs/vendoring.md): ARKTOS_SRC is an Arktos 6685f14 tree
# prepared by make arktos-src, never written; WORK gets the patched
# tree (src/, the series as commits) and six binaries (bin/): kube-apiserver,
# kubelet, kube-proxy and hollow-node, which the series patches, and
# kube-controller-manager and kube-scheduler, which the cluster lab runs.
# ARKTOS_TEST=0 skips Arktos's tests of the touched packages. Then `go mod
# vendor` in the patched tree must reproduce tpkit's module
# (arktos/check-vendor.sh, in WORK/vendor; ARKTOS_VENDOR_CHECK=0 skips it),
# and Arktos's own quick checks (make quick-verify's set) run on ARKTOS_SRC
# and the patched tree side by side (arktos/verify.sh, in WORK/verify): a
# check the series makes fail fails the target; ARKTOS_VERIFY=0 skips them.
arktos-patch:
	@test -n "$(ARKTOS_SRC)" -a -n "$(WORK)" || { echo "set ARKTOS_SRC to an Arktos tree (make arktos-src prepares one) and WORK to a scratch folder"; exit 2; }
	./arktos/apply.sh $(abspath $(ARKTOS_SRC)) $(abspath $(WORK))

# The node lab (test/arktos-node) in a network namespace of its own:
# ARKTOS_BIN holds kube-apiserver, hollow-node and kube-proxy, patched (make
# arktos-patch) or stock; a stock run reports where Arktos differs.
check-arktos-node:
	@test -n "$(ARKTOS_BIN)" || { echo "set ARKTOS_BIN to WORK/bin of make arktos-patch (or a stock Arktos build)"; exit 2; }
	./test/arktos-node/run.sh $(abspath $(ARKTOS_BIN))

# Arktos's own kube-proxy and hollow-node (stock, or patched) against two
# fake-tp TPs (test/faketp-arktos), in a network namespace of its own:
# ARKTOS_BIN holds kube-apiserver (the resource partition), hollow-node and
# kube-proxy. FAKETP_ARKTOS_HOLD=DURATION shortens the 5m15s kube-proxy is
# held past its API-server config manager's retries.
check-faketp-arktos:
	@test -n "$(ARKTOS_BIN)" || { echo "set ARKTOS_BIN to a folder with Arktos's kube-apiserver, hollow-node and kube-proxy (stock: ../arktos/stock/bin)"; exit 2; }
	./test/faketp-arktos/run.sh $(abspath $(ARKTOS_BIN))

# The cluster lab (test/arktos-cluster), as root, in namespaces of its own:
# the patched kubelet on a real container runtime (dockerd), kube-proxy, each
# TP's controllers and scheduler, and partition-dns deployed from deploy/.
# ARKTOS_BIN is WORK/bin of make arktos-patch, IMAGE_DIR that of make images.
check-arktos-cluster:
	@test -n "$(ARKTOS_BIN)" -a -n "$(IMAGE_DIR)" || { echo "set ARKTOS_BIN to WORK/bin of make arktos-patch and IMAGE_DIR to the folder of make images"; exit 2; }
	./test/arktos-cluster/run.sh $(abspath $(ARKTOS_BIN)) $(abspath $(IMAGE_DIR))

# A scale-out cluster on this machine, left running (hack/cluster.sh,
# docs/local-cluster.md): the resource partition and two TPs, two real nodes
# (kubelet, kube-proxy, dockerd, each in namespaces of its own, joined by a
# bridge), tpkit deployed from deploy/. As root; CLUSTER_DIR and CLUSTER_PORT
# move its state and its host ports.
cluster-up:
	@test -n "$(ARKTOS_BIN)" -a -n "$(IMAGE_DIR)" || { echo "set ARKTOS_BIN to WORK/bin of make arktos-patch and IMAGE_DIR to the folder of make images"; exit 2; }
	./hack/cluster.sh up $(abspath $(ARKTOS_BIN)) $(abspath $(IMAGE_DIR))

cluster-down:
	./hack/cluster.sh down

cluster-status:
	./hack/cluster.sh status

# cluster-up, the cross-node checks of test/local-cluster, cluster-down.
check-cluster:
	@test -n "$(ARKTOS_BIN)" -a -n "$(IMAGE_DIR)" || { echo "set ARKTOS_BIN to WORK/bin of make arktos-patch and IMAGE_DIR to the folder of make images"; exit 2; }
	./test/local-cluster/run.sh $(abspath $(ARKTOS_BIN)) $(abspath $(IMAGE_DIR))

# Kubernetes's [sig-network] DNS and Services e2e specs from Arktos's tree
# (WORK/src next to ARKTOS_BIN=WORK/bin, or ARKTOS_SRC), built here with their
# images, against the running cluster-up through tp1 then tp2: JUnit and a
# table in CLUSTER_DIR/conformance (hack/conformance.sh, docs/conformance.md).
check-conformance:
	@test -n "$(ARKTOS_SRC)$(ARKTOS_BIN)" || { echo "set ARKTOS_BIN to WORK/bin of make arktos-patch (its WORK/src builds the suite), or ARKTOS_SRC to the tree"; exit 2; }
	./hack/conformance.sh $(abspath $(or $(ARKTOS_SRC),$(ARKTOS_BIN)/../src))

# Every kustomization under deploy/ (and rbac-per-tp.yaml) through kubectl
# apply --dry-run=server against one real Arktos TP (ARKTOS_BIN: its
# kube-apiserver) and an upstream kube-apiserver KUBE_VERSION, which the
# script builds once from the Go module proxy into ~/.cache/tpkit (10 minutes
# and more on 2 cores); deploy/overlays/newer against upstream only; the
# overlays of hack/deploy-overlay.sh; and, on a second Arktos TP with client
# certificates and RBAC, rbac-per-tp.yaml and hack/tp-kubeconfig.sh for real.
KUBE_VERSION ?= v1.37.2
check-deploy:
	@test -n "$(ARKTOS_BIN)" || { echo "set ARKTOS_BIN to the folder holding Arktos's kube-apiserver (make arktos-src STOCK_BIN=DIR builds one)"; exit 2; }
	ARKTOS_BIN=$(abspath $(ARKTOS_BIN)) KUBE_VERSION=$(KUBE_VERSION) ./hack/check-deploy.sh

# The demo's ports and timeout are DEMO_* variables (README.md, Quickstart);
# it fails, keeping its logs, when a port is taken or a program fails.
demo:
	./hack/demo.sh

FUZZTIME ?= 20s
# Minimizing a new input runs the target for up to 60s by default and counts
# no execs meanwhile, which looks like a hang on targets with large inputs
# (FuzzOpenFile's are database files).
FUZZMINIMIZETIME ?= 5s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf $(BIN)
