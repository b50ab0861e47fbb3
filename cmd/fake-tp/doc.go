// Command fake-tp serves fake Arktos tenant partitions for multi-partition
// harnesses. It is testbed/faketp (pkg/faketp before the test bed moved out of pkg/) as a
// process: the one program that imports the test bed's library, being the
// test bed's own program.
//
//	fake-tp --partitions 3 --listen 127.0.0.1:6443 --kubeconfig-dir DIR
//
// serves tp1..tp3 on ports 6443..6445 and writes DIR/tp1.kubeconfig and so on.
// Each TP has its own service cluster IP range: tp1 10.96.0.0/16, tp2
// 10.97.0.0/16 and so on, or one per TP from --service-cidr. TP names
// (--partition-names) must be distinct; bad flags exit with status 2.
// It logs one line per TP when it is ready and stops cleanly on SIGTERM.
// The TPs behave as Arktos TPs by default; --controllers, --endpointslices
// and --watch-list change that. --seed, --data-dir and --generate fill the
// TPs; --admin-listen serves the fault controls (testbed/faketp.AdminHandler)
// and /healthz, /readyz, /metrics on a loopback address.
package main
