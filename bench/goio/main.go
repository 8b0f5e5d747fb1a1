// goio: a goroutine-heavy file and pipe I/O workload for bench/workloads.py.
//
// Usage: goio DIR
//
// FileWorkers goroutines each write FilesPerWorker files of FileSize bytes in
// DIR, read them back and check every byte; PipePairs goroutine pairs each
// push PipeBytes through an os.Pipe in PipeChunk-byte writes while the reader
// checksums what arrives.  The output is deterministic, so the bench compares
// it with the expected text: a run that lost or corrupted data prints other
// figures (or "error: ..." and exits 1).
package main

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
)

const (
	FileWorkers    = 64
	FilesPerWorker = 50
	FileSize       = 8192
	PipePairs      = 16
	PipeBytes      = 16 << 20
	PipeChunk      = 4096
)

// pattern returns n bytes that depend on seed, so that a file mixed up with
// another one fails the check.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func fileWorker(dir string, w int) (int64, error) {
	var total int64
	for i := 0; i < FilesPerWorker; i++ {
		want := pattern(w*FilesPerWorker+i, FileSize)
		name := filepath.Join(dir, fmt.Sprintf("w%02d-f%03d", w, i))
		if err := os.WriteFile(name, want, 0o644); err != nil {
			return 0, err
		}
		got, err := os.ReadFile(name)
		if err != nil {
			return 0, err
		}
		if !bytes.Equal(got, want) {
			return 0, fmt.Errorf("%s: content differs", name)
		}
		total += int64(len(got))
	}
	return total, nil
}

// pipePair writes PipeBytes into a pipe from one goroutine and reads them in
// another; returns the reader's CRC-32 and byte count.
func pipePair(p int) (uint32, int64, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	chunk := pattern(1000+p, PipeChunk)
	werr := make(chan error, 1)
	go func() {
		defer w.Close()
		for sent := 0; sent < PipeBytes; sent += PipeChunk {
			if _, err := w.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	h := crc32.NewIEEE()
	n, err := io.Copy(h, r)
	r.Close()
	if err == nil {
		err = <-werr
	}
	return h.Sum32(), n, err
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goio DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fileBytes, pipeBytes int64
	var pipeSum uint32
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for w := 0; w < FileWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			n, err := fileWorker(dir, w)
			if err != nil {
				fail(err)
			}
			mu.Lock()
			fileBytes += n
			mu.Unlock()
		}(w)
	}
	for p := 0; p < PipePairs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			sum, n, err := pipePair(p)
			if err != nil {
				fail(err)
			}
			mu.Lock()
			pipeSum ^= sum // order-independent combination
			pipeBytes += n
			mu.Unlock()
		}(p)
	}
	wg.Wait()
	if firstErr != nil {
		fmt.Println("error:", firstErr)
		os.Exit(1)
	}
	fmt.Printf("files=%d file_bytes=%d pipes=%d pipe_bytes=%d pipe_crc_xor=%08x\n",
		FileWorkers*FilesPerWorker, fileBytes, PipePairs, pipeBytes, pipeSum)
}
