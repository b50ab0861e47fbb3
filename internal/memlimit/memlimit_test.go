package memlimit

import (
	"errors"
	"io/fs"
	"testing"
)

func files(m map[string]string) Reader {
	return func(p string) ([]byte, error) {
		if s, ok := m[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestCgroupLimit(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"v2", map[string]string{"/proc/self/cgroup": "0::/kubepods/pod1/c1\n", "/r/kubepods/pod1/c1/memory.max": "178257920\n"}, 178257920, true},
		{"v2 unlimited", map[string]string{"/proc/self/cgroup": "0::/x\n", "/r/x/memory.max": "max\n"}, 0, false},
		{"v2 namespaced root", map[string]string{"/proc/self/cgroup": "0::/\n", "/r/memory.max": "1048576"}, 1048576, true},
		{"hybrid v2", map[string]string{"/proc/self/cgroup": "0::/a\n", "/r/unified/a/memory.max": "2097152"}, 2097152, true},
		{"v1", map[string]string{"/proc/self/cgroup": "5:cpu,cpuacct:/a\n4:memory:/pa/b\n0::/\n", "/r/memory/pa/b/memory.limit_in_bytes": "178257920"}, 178257920, true},
		{"v1 unlimited", map[string]string{"/proc/self/cgroup": "4:memory:/b\n", "/r/memory/b/memory.limit_in_bytes": "9223372036854771712"}, 0, false},
		{"v1 in its own namespace", map[string]string{"/proc/self/cgroup": "4:memory:/elsewhere\n", "/r/memory/memory.limit_in_bytes": "3145728"}, 3145728, true},
		{"nothing readable", map[string]string{"/proc/self/cgroup": "4:memory:/b\n"}, 0, false},
		{"garbage", map[string]string{"/proc/self/cgroup": "4:memory:/b\n", "/r/memory/b/memory.limit_in_bytes": "lots"}, 0, false},
		{"no /proc", map[string]string{}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := CgroupLimit(files(tc.files), "/r")
			if got != tc.want || ok != tc.ok {
				t.Fatalf("CgroupLimit = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	limited := func() (int64, bool) { return 200 << 20, true }
	coreDNS := func() (int64, bool) { return 170 << 20, true }
	large := func() (int64, bool) { return 1 << 30, true }
	tiny := func() (int64, bool) { return 40 << 20, true }
	unlimited := func() (int64, bool) { return 0, false }
	cases := []struct {
		flag   string
		cgroup func() (int64, bool)
		want   int64
		err    bool
	}{
		{"auto", limited, 200<<20 - Reserve, false},
		{"auto", coreDNS, 138 << 20, false},
		{"auto", large, 912680550, false}, // 85% of 1 GiB, rounded down
		{"auto", tiny, 0, false},
		{"auto", unlimited, 0, false},
		{"none", limited, 0, false},
		{"0", limited, 0, false},
		{"150Mi", unlimited, 150 << 20, false},
		{"1G", unlimited, 1e9, false},
		{"lots", unlimited, 0, true},
		{"-5Mi", unlimited, 0, true},
	}
	for _, tc := range cases {
		got, err := Resolve(tc.flag, tc.cgroup)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("Resolve(%q) = %d, %v; want %d, error %v", tc.flag, got, err, tc.want, tc.err)
		}
	}
	if _, err := Resolve("lots", unlimited); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a bad flag gives %v", err)
	}
}
