// The Go guest: a static binary that makes raw syscalls, runs goroutines on
// several threads, installs its signal handlers with SA_ONSTACK on
// sigaltstacks, preempts tight loops with SIGURG, and runs children through
// clone(CLONE_VM|CLONE_VFORK) with a null stack (os/exec). Run one part with
// `goguest PART`, all with no argument.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Goroutines passing values through channels on several OS threads.
func partChan() {
	const workers = 50
	in := make(chan int)
	out := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range in {
				syscall.Getpid() // a real syscall on whatever thread runs us
				out <- v * v
			}
		}()
	}
	go func() {
		for i := 1; i <= 1000; i++ {
			in <- i
		}
		close(in)
	}()
	go func() { wg.Wait(); close(out) }()
	sum := 0
	for v := range out {
		sum += v
	}
	fmt.Printf("chan: sum of squares 1..1000 = %d\n", sum)
}

// Eight goroutines on four threads (GOMAXPROCS 4), each making system
// calls: the process stays threaded for the whole part.
func partGoroutines() {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	var wg sync.WaitGroup
	var calls int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if syscall.Getppid() > 0 {
					atomic.AddInt64(&calls, 1)
				}
				if f, err := os.Open("/dev/null"); err == nil {
					f.Close()
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("goroutines: 8 on 4 threads made %d getppid calls\n", calls)
}

// os/exec: fork+exec via clone(CLONE_VM|CLONE_VFORK) with stack 0.
func partExec() {
	out, err := exec.Command("/bin/echo", "hello", "from", "echo").Output()
	fmt.Printf("exec echo: %q err=%v\n", string(out), err)
	err = exec.Command("/bin/sh", "-c", "exit 3").Run()
	if ee, ok := err.(*exec.ExitError); ok {
		fmt.Printf("exec sh exit 3: exit code %d\n", ee.ExitCode())
	} else {
		fmt.Printf("exec sh exit 3: unexpected %v\n", err)
	}
	_, err = exec.Command("/nonexistent/program").Output()
	fmt.Printf("exec missing: %v\n", err)
	// several at once from different goroutines
	var wg sync.WaitGroup
	res := make([]string, 8)
	for i := range res {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			o, err := exec.Command("/bin/echo", fmt.Sprint("child ", i)).Output()
			res[i] = strings.TrimSpace(string(o))
			if err != nil {
				res[i] = err.Error()
			}
		}(i)
	}
	wg.Wait()
	fmt.Printf("exec 8 in parallel: %s\n", strings.Join(res, ", "))
}

var spin uint64
var stopSpin uint32

// A goroutine in a loop without function calls can only be stopped by
// asynchronous preemption (SIGURG); with GOMAXPROCS=1 nothing else runs
// until it is preempted. Then many goroutines sleeping at once.
func partPreempt() {
	prev := runtime.GOMAXPROCS(1)
	go func() {
		for i := uint64(0); atomic.LoadUint32(&stopSpin) == 0; i++ {
			spin = i
		}
	}()
	time.Sleep(50 * time.Millisecond) // needs the spinner preempted
	start := time.Now()
	var n int64
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i%20) * time.Millisecond)
			atomic.AddInt64(&n, 1)
		}(i)
	}
	wg.Wait()
	atomic.StoreUint32(&stopSpin, 1)
	runtime.GOMAXPROCS(prev)
	fmt.Printf("preempt: main ran while a goroutine spun; 1000 sleepers woke: %d, in under 10s: %v\n",
		n, time.Since(start) < 10*time.Second)
}

// signal.Notify for SIGUSR1 sent to ourselves, and SIGINT ignored then
// reset.
func partSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case s := <-c:
		fmt.Printf("signal: got %v\n", s)
	case <-time.After(10 * time.Second):
		fmt.Printf("signal: timed out\n")
	}
	signal.Stop(c)
	// a signal to a specific thread while goroutines are running
	signal.Notify(c, syscall.SIGUSR2)
	done := make(chan bool)
	go func() {
		runtime.LockOSThread()
		syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGUSR2)
		done <- true
	}()
	<-done
	select {
	case s := <-c:
		fmt.Printf("signal: got %v via tgkill\n", s)
	case <-time.After(10 * time.Second):
		fmt.Printf("signal: tgkill timed out\n")
	}
}

// Raw syscalls and files.
func partFiles() {
	dir, err := os.MkdirTemp("", "zvgo")
	if err != nil {
		fmt.Println("files:", err)
		return
	}
	defer os.RemoveAll(dir)
	for _, n := range []string{"b", "a", "c"} {
		os.WriteFile(dir+"/"+n, []byte(n+n), 0o644)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		b, _ := os.ReadFile(dir + "/" + e.Name())
		names = append(names, e.Name()+"="+string(b))
	}
	sort.Strings(names)
	var u syscall.Utsname
	err = syscall.Uname(&u)
	fmt.Printf("files: %s; uname err=%v\n", strings.Join(names, " "), err)
}

// NULL pointers, which Go turns into recoverable panics: a nil read, a call
// through a nil func value, Stop on a nil *time.Timer (Go's TestIssue5745).
func partNil() {
	try := func(name string, f func()) {
		defer func() {
			r := recover()
			fmt.Printf("nil %s: recovered %v\n", name, r)
		}()
		f()
	}
	var p *int
	var fn func() int
	var t *time.Timer
	try("read", func() { fmt.Println(*p) })
	try("call", func() { fmt.Println(fn()) })
	try("timer", func() { t.Stop() })
}

// os/exec with SysProcAttr.Chroot (Go's TestUnshareMountNameSpaceChroot):
// the exec helper child chroots; the process's later execs still work. As
// non-root the chroot fails alike natively and under zvisor.
func partChroot() {
	run := func(name string, chroot bool) {
		c := exec.Command("/bin/echo", name)
		if chroot {
			c.SysProcAttr = &syscall.SysProcAttr{Chroot: "/"}
		}
		out, err := c.CombinedOutput()
		fmt.Printf("chroot part, %s: %q err=%v\n", name, out, err)
	}
	run("before", false)
	run("with chroot", true)
	run("after", false)
	run("after again", false)
}

// Not among the parts run by default (its output depends on the clock):
// the wall clock as time.Now() reads it through the vDSO, and how long a
// 100 ms sleep lasts on the monotonic clock.
func partTime() {
	start := time.Now()
	time.Sleep(100 * time.Millisecond)
	fmt.Printf("unix=%d year=%d slept=%dms\n", start.Unix(), start.UTC().Year(),
		time.Since(start).Milliseconds())
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "time" {
		partTime()
		os.Exit(4)
	}
	parts := []struct {
		name string
		fn   func()
	}{
		{"chan", partChan}, {"goroutines", partGoroutines}, {"exec", partExec}, {"preempt", partPreempt},
		{"signal", partSignal}, {"files", partFiles}, {"nil", partNil},
		{"chroot", partChroot},
	}
	want := ""
	if len(os.Args) > 1 {
		want = os.Args[1]
	}
	ran := false
	for _, p := range parts {
		if want == "--list" {
			fmt.Println(p.name)
			continue
		}
		if want == "" || want == p.name {
			p.fn()
			ran = true
		}
	}
	if want != "--list" && !ran {
		fmt.Fprintf(os.Stderr, "unknown part %s\n", want)
		os.Exit(2)
	}
	os.Exit(4)
}
