package main

// The kernel's floor for produce: what writing the bytes a produce run
// stores costs the kernel alone. On the machines the bench runs on, a
// buffered pwrite of fresh page-cache pages costs from 0.2 to over 1
// CPU-s/GB of system time, depending on how much of the guest's memory the
// hypervisor has to back anew (free page reporting hands freed memory back
// to the host, and the first touch after that faults on the host). No
// broker avoids it, so the table prints it next to the produce figure,
// measured right after each kcompatd round, in the same directory tree.
// So does receiving the bytes over loopback TCP, which every broker does
// first; the two together are the kernel's floor of a produce run.

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

const (
	// floorWriteSize is what one pwrite of the broker carries: one
	// producer batch (franz-go's default producer.batch.max.bytes).
	floorWriteSize = 1000012
	// rusageThread is Linux's RUSAGE_THREAD.
	rusageThread = 1
)

// floorRuns and recvRuns hold one kernel-floor figure (CPU-s/GB) per
// round: the writes, and the receive.
var floorRuns, recvRuns []float64

// floorRound measures the floor once, printing it, and keeps the figure;
// a failure is printed and leaves the round out.
func floorRound(tmp string) {
	v, err := measureFloor(tmp, *flagSize, *flagPartitions)
	if err != nil {
		progress("kernel floor: %v", err)
		return
	}
	r, err := measureRecvFloor(*flagSize)
	if err != nil {
		progress("kernel floor: %v", err)
		return
	}
	progress("kernel floor: writing the same bytes costs %.2f CPU-s/GB, receiving them %.2f", v, r)
	floorRuns = append(floorRuns, v)
	recvRuns = append(recvRuns, r)
}

// floorRow is the table's row for the floor, or nil if it was not measured.
func floorRow() []string {
	if len(floorRuns) == 0 {
		return nil
	}
	sum := make([]float64, len(floorRuns))
	for i := range sum {
		sum[i] = floorRuns[i] + recvRuns[i]
	}
	return []string{"  kernel floor of produce", "", "",
		spread("%.2f", " CPU-s/GB", sum),
		fmt.Sprintf("thread CPU of receiving -size bytes over loopback TCP (%.2f) and of buffered pwrites of them (%.2f; %d B writes over %d new files in the data dir's file system); median of %d",
			medianF(recvRuns), medianF(floorRuns), floorWriteSize, *flagPartitions, len(floorRuns))}
}

// measureFloor appends size bytes of random data in floorWriteSize writes,
// round robin over files new files under tmp (a partition's segment each),
// from one OS thread, and returns that thread's CPU time per GB. The
// source cycles through 64 MiB, so it is not all in the CPU's caches,
// as a broker's request buffers are not.
func measureFloor(tmp string, size int64, files int) (float64, error) {
	dir, err := os.MkdirTemp(tmp, "floor-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	src := make([]byte, 64<<20)
	if _, err := rand.Read(src); err != nil {
		return 0, err
	}
	fs := make([]*os.File, max(files, 1))
	for i := range fs {
		if fs[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", i))); err != nil {
			return 0, err
		}
		defer fs[i].Close()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, err := threadCPU()
	if err != nil {
		return 0, err
	}
	offs := make([]int64, len(fs))
	srcAt := 0
	for written, i := int64(0), 0; written < size; i = (i + 1) % len(fs) {
		n := int(min(floorWriteSize, size-written))
		if srcAt+n > len(src) {
			srcAt = 0
		}
		if _, err := fs[i].WriteAt(src[srcAt:srcAt+n], offs[i]); err != nil {
			return 0, err
		}
		srcAt += n
		offs[i] += int64(n)
		written += int64(n)
	}
	cpu1, err := threadCPU()
	if err != nil {
		return 0, err
	}
	return (cpu1 - cpu0).Seconds() / (float64(size) / 1e9), nil
}

// measureRecvFloor receives size bytes over loopback TCP from a sender
// in this process, 8 MiB at a time as a broker reads a Produce request,
// and returns the receiving thread's CPU time per GB.
func measureRecvFloor(size int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	sent := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		chunk := make([]byte, floorWriteSize)
		if _, err := rand.Read(chunk); err != nil {
			sent <- err
			return
		}
		for left := size; left > 0 && err == nil; left -= int64(len(chunk)) {
			_, err = c.Write(chunk[:min(int64(len(chunk)), left)])
		}
		sent <- err
	}()
	c, err := ln.Accept()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, 8<<20)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, err := threadCPU()
	if err != nil {
		return 0, err
	}
	for got := int64(0); got < size; {
		n, err := io.ReadFull(c, buf[:min(int64(len(buf)), size-got)])
		got += int64(n)
		if err != nil {
			return 0, err
		}
	}
	cpu1, err := threadCPU()
	if err != nil {
		return 0, err
	}
	if err := <-sent; err != nil {
		return 0, err
	}
	return (cpu1 - cpu0).Seconds() / (float64(size) / 1e9), nil
}

// threadCPU is the calling OS thread's user and system time.
func threadCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
