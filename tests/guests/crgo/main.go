// crgo: the Go guest of the checkpoint tests (tests/test_checkpoint.py),
// built static as crgoguest. A producer goroutine paced by a time.Ticker
// feeds 8 workers through a channel; a collector goroutine sums their
// results per step; a time.AfterFunc timer and a select on time.After run
// beside them. The main goroutine prints one line per step, in order, from
// values that depend only on the step, so the output is the same however
// the run is cut.
//
//	crgoguest [STEPS]   default 40 steps of 50 ms; exits 5
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

type job struct{ step, part int }
type result struct{ step, part int; value uint64 }

func work(j job) uint64 {
	h := uint64(14695981039346656037) ^ uint64(j.step*31+j.part)
	for i := 0; i < 20000*(1+j.part); i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h % 1000003
}

func main() {
	steps := 40
	if len(os.Args) > 1 {
		steps, _ = strconv.Atoi(os.Args[1])
	}
	const parts = 8
	jobs := make(chan job)
	results := make(chan result, parts)
	sums := make(chan [2]uint64) // step, sum
	var wg sync.WaitGroup
	for w := 0; w < parts; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				results <- result{j.step, j.part, work(j)}
			}
		}()
	}
	// Collector: one sum per step, in step order, once all its parts
	// arrived (a late worker may finish a step after the next one).
	go func() {
		acc := map[int]uint64{}
		seen := map[int]int{}
		next := 1
		for r := range results {
			acc[r.step] += r.value
			seen[r.step]++
			for seen[next] == parts {
				sums <- [2]uint64{uint64(next), acc[next]}
				delete(acc, next)
				delete(seen, next)
				next++
			}
		}
		close(sums)
	}()
	// Producer, paced by a ticker.
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for s := 1; s <= steps; s++ {
			<-tick.C
			for p := 0; p < parts; p++ {
				jobs <- job{s, p}
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	var fired atomic.Int32
	timer := time.AfterFunc(time.Duration(steps)*25*time.Millisecond, func() { fired.Add(1) })
	defer timer.Stop()

	var total uint64
	for s := range sums {
		total += s[1]
		fmt.Printf("step %d sum %d total %d\n", s[0], s[1], total)
	}
	select {
	case <-time.After(2 * time.Second):
		fmt.Println("FAIL: timed out waiting for the timer")
	case <-func() chan struct{} {
		c := make(chan struct{})
		go func() {
			for fired.Load() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			close(c)
		}()
		return c
	}():
		fmt.Println("AfterFunc timer fired once:", fired.Load() == 1)
	}
	fmt.Printf("done %d steps, total %d\n", steps, total)
	os.Exit(5)
}
