// A static Go program under virtual ids, as root sees it natively: os.Getuid
// and the like, os.Chown, os.Lchown of a symlink and os.Stat; syscall.Setuid
// and its family, which Go makes on every thread of the process (the
// runtime's allthreads mechanism), checked in each thread's own status; and
// an os/exec child that inherits the ids. Run as root: fakeidgo ids,
// fakeidgo files DIR, fakeidgo setuid.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

func ids(who string) {
	groups, err := os.Getgroups()
	fmt.Printf("%s: uid %d euid %d gid %d egid %d groups %v %v\n", who, os.Getuid(), os.Geteuid(),
		os.Getgid(), os.Getegid(), groups, err)
}

func owner(name string, lstat bool) string {
	var st syscall.Stat_t
	var err error
	if lstat {
		err = syscall.Lstat(name, &st)
	} else {
		err = syscall.Stat(name, &st)
	}
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d:%d %o", st.Uid, st.Gid, st.Mode)
}

func files(dir string) {
	f := filepath.Join(dir, "f")
	l := filepath.Join(dir, "l")
	os.WriteFile(f, []byte("x"), 0644)
	os.Symlink("f", l)
	fmt.Println("chown f:", os.Chown(f, 1, 2), owner(f, true))
	fmt.Println("lchown l:", os.Lchown(l, 3, 4), owner(l, true), owner(l, false))
	fmt.Println("chmod f:", os.Chmod(f, 0755|os.ModeSetuid), owner(f, false))
	fi, _ := os.Lstat(l)
	st := fi.Sys().(*syscall.Stat_t)
	fmt.Printf("os.Lstat l: %d:%d %v\n", st.Uid, st.Gid, fi.Mode())
	fmt.Println("mknod:", syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0666, 0x103),
		owner(filepath.Join(dir, "null"), false))
	fmt.Println("mkfifo:", syscall.Mkfifo(filepath.Join(dir, "fifo"), 0600), owner(filepath.Join(dir, "fifo"), false))
}

// The Uid line of each thread's status.
func threadUids() string {
	ents, _ := os.ReadDir("/proc/self/task")
	seen := map[string]int{}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "Gid:") || strings.HasPrefix(line, "Groups:") {
				seen[strings.Join(strings.Fields(line), " ")]++
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	if len(out) != 3 {
		return fmt.Sprintf("threads disagree: %v", seen)
	}
	return "every thread agrees"
}

func setuid() {
	// threads of its own, parked, so that the change must reach them
	var ready, done sync.WaitGroup
	stop := make(chan bool)
	for i := 0; i < 4; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			runtime.LockOSThread()
			ready.Done()
			<-stop
			done.Done()
		}()
	}
	ready.Wait()
	fmt.Println("setgroups:", syscall.Setgroups([]int{42, 7}))
	fmt.Println("setgid:", syscall.Setgid(42))
	fmt.Println("setuid:", syscall.Setuid(100))
	ids("after")
	fmt.Println("threads:", threadUids())
	fmt.Println("setuid(0):", syscall.Setuid(0))
	fmt.Println("setreuid(0,0):", syscall.Setreuid(0, 0))
	out, err := exec.Command("/proc/self/exe", "ids").Output()
	fmt.Printf("child: %s%v\n", out, err)
	close(stop)
	done.Wait()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: fakeidgo ids | files DIR | setuid")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "--list":
		fmt.Println("ids\nfiles\nsetuid")
	case "ids":
		ids("ids")
	case "files":
		files(os.Args[2])
	case "setuid":
		ids("before")
		setuid()
	}
}
