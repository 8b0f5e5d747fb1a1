// rootgo: a static Go program (no libc: its own raw system calls) that looks
// at the root it runs in, the case where LD_PRELOAD tools (fakechroot,
// fakeroot) let a program see the host: the root's /etc/os-release, its /
// and a link inside it, the identity, an lchown and what stat says then,
// and an exec of the root's /bin/true. tests/test_rootfs.py runs it under
// chroot and under zvisor run --root --fake-root and compares.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
)

func check(what string, err error) {
	if err != nil {
		fmt.Printf("%s: %v\n", what, err)
	}
}

func main() {
	data, err := os.ReadFile("/etc/os-release")
	check("read /etc/os-release", err)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "PRETTY_NAME=") {
			fmt.Println(l)
		}
	}
	ents, err := os.ReadDir("/")
	check("readdir /", err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	fmt.Println("/:", strings.Join(names, " "))
	link, err := os.Readlink("/bin")
	check("readlink /bin", err)
	fmt.Println("/bin ->", link)
	wd, err := os.Getwd()
	check("getwd", err)
	fmt.Println("cwd:", wd)
	fmt.Println("uid", os.Getuid(), "euid", os.Geteuid(), "gid", os.Getgid(), "egid", os.Getegid())
	groups, err := os.Getgroups()
	check("getgroups", err)
	fmt.Println("groups", groups)

	f := "/tmp/rootgo.owned"
	os.Remove(f)
	check("create", os.WriteFile(f, []byte("x"), 0644))
	check("lchown", os.Lchown(f, 1234, 5678))
	check("chmod", syscall.Chmod(f, 02755))
	var st syscall.Stat_t
	check("stat", syscall.Stat(f, &st))
	fmt.Printf("%s: uid %d gid %d mode %o\n", f, st.Uid, st.Gid, st.Mode)
	os.Remove(f)

	out, err := exec.Command("/bin/sh", "-c", "echo child done; exit 3").Output()
	fmt.Printf("exec: %q %v\n", out, err)
	exe, err := os.Executable()
	check("executable", err)
	fmt.Println("executable:", exe)
}
