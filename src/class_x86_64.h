/* SPDX-License-Identifier: MIT */
/*
 * The x86_64 class table: every number of <asm/unistd_64.h>, plus the calls
 * added up to Linux 6.18 that older headers lack (defined below). Included
 * inside an array initializer by class.c; each line is
 * [__NR_name] = kind. Numbers never assigned on x86_64 (335..423) are left
 * out on purpose: SK_UNKNOWN, async, and the kernel answers ENOSYS.
 *
 * inline: cannot usefully block, or bound to the calling thread (SPEC 3);
 * async: may block with no non-blocking form, or looks up a path (a path
 * walk may read directories from disk); try: a strategy of try.c.
 */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#define __NR_fchmodat2 452
#define __NR_map_shadow_stack 453
#define __NR_futex_wake 454
#define __NR_futex_wait 455
#define __NR_futex_requeue 456
#endif
#ifndef __NR_statmount
#define __NR_statmount 457
#define __NR_listmount 458
#define __NR_lsm_get_self_attr 459
#define __NR_lsm_set_self_attr 460
#define __NR_lsm_list_modules 461
#endif
#ifndef __NR_mseal
#define __NR_mseal 462
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#define __NR_getxattrat 464
#define __NR_listxattrat 465
#define __NR_removexattrat 466
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
#ifndef __NR_file_getattr
#define __NR_file_getattr 468
#define __NR_file_setattr 469
#endif

#define SYSLET__NR_HIGHEST __NR_file_setattr

#define I(name) [__NR_##name] = SK_INLINE
#define A(name) [__NR_##name] = SK_ASYNC
#define T(name, kind) [__NR_##name] = kind
/* inline, then the descriptor numbers it re-bound or made are forgotten */
#define F(name) [__NR_##name] = SK_INLINE_FD
/* Run by indirect.c itself: fork through glibc, credential changes seen. */
#define P(name) [__NR_##name] = SK_PROC

/* 0 */
T(read, SK_READ), T(write, SK_WRITE), T(open, SK_OPEN),
	/* close: the number must be free when indirect() returns, as with close(2) */
	F(close), A(stat),
	/* fstat/fstatfs: network file systems ask the server */
	A(fstat), A(lstat), T(poll, SK_POLL), I(lseek),
	/* memory map changes: the program needs their answer (an address) now */
	I(mmap), I(mprotect), I(munmap), I(brk), I(rt_sigaction),
	I(rt_sigprocmask), I(rt_sigreturn),
	/* ioctl: any driver request, may wait for hardware */
	A(ioctl), T(pread64, SK_PREAD), T(pwrite64, SK_PWRITE),
	T(readv, SK_READV), T(writev, SK_WRITEV), A(access), F(pipe),
	T(select, SK_SELECT),
	/* sched_yield yields the calling thread */
	I(sched_yield), I(mremap),
	/* msync(MS_SYNC) waits for writeback */
	A(msync), I(mincore),
	/* madvise(MADV_POPULATE_*) faults pages in from disk */
	A(madvise), I(shmget), I(shmat), I(shmctl), F(dup), F(dup2),
	/* pause waits for a signal to the calling thread: it blocks the caller */
	I(pause), T(nanosleep, SK_NANOSLEEP), I(getitimer), I(alarm),
	I(setitimer), I(getpid), A(sendfile), F(socket), T(connect, SK_ACCEPT),
	T(accept, SK_ACCEPT), T(sendto, SK_SENDTO), T(recvfrom, SK_RECVFROM),
	T(sendmsg, SK_SENDMSG), T(recvmsg, SK_RECVMSG), I(shutdown),
	/* bind of an AF_UNIX path creates a file */
	A(bind), I(listen), I(getsockname), I(getpeername), F(socketpair),
	I(setsockopt), I(getsockopt),
	/* a new task or program starts from the calling thread */
	P(clone), P(fork), P(vfork), I(execve),
	/* exit ends the calling thread */
	I(exit), T(wait4, SK_WAIT4), I(kill), I(uname), I(semget),
	/* semop/semtimedop wait for the semaphore */
	A(semop), I(semctl), I(shmdt), I(msgget), T(msgsnd, SK_MSGSND),
	T(msgrcv, SK_MSGRCV), I(msgctl), T(fcntl, SK_FCNTL), T(flock, SK_FLOCK),
	A(fsync), A(fdatasync), A(truncate), A(ftruncate), A(getdents),
	I(getcwd), A(chdir), I(fchdir), A(rename), A(mkdir), A(rmdir),
	/* creat is open(O_CREAT|O_TRUNC): always a worker */
	A(creat), A(link), A(unlink), A(symlink), A(readlink), A(chmod),
	/* fchmod/fchown: a journal transaction may wait */
	A(fchmod), A(chown), A(fchown), A(lchown), I(umask), I(gettimeofday),
	/* getrusage(RUSAGE_THREAD) is about the calling thread */
	I(getrlimit), I(getrusage), I(sysinfo), I(times),
	/* ptrace requests belong to the tracing thread */
	I(ptrace), I(getuid),
	/* syslog(SYSLOG_ACTION_READ) waits for messages */
	A(syslog), I(getgid),
	/* raw set*id calls change the calling thread's credentials only */
	P(setuid), P(setgid), I(geteuid), I(getegid), I(setpgid), I(getppid),
	I(getpgrp), I(setsid), P(setreuid), P(setregid), I(getgroups),
	P(setgroups), P(setresuid), I(getresuid), P(setresgid), I(getresgid),
	I(getpgid), P(setfsuid), P(setfsgid), I(getsid), I(capget), P(capset),
	/* the calling thread's signals, mask and stack */
	I(rt_sigpending), I(rt_sigtimedwait), I(rt_sigqueueinfo),
	I(rt_sigsuspend), I(sigaltstack), A(utime), A(mknod),
	/* uselib: a path lookup where the kernel still has it */
	A(uselib),
	/* personality is per task */
	I(personality), A(ustat), A(statfs), A(fstatfs), I(sysfs),
	/* who == 0 names the calling thread */
	I(getpriority), I(setpriority), I(sched_setparam), I(sched_getparam),
	/* policies: policy.c's answers move too (indirect.c) */
	P(sched_setscheduler), I(sched_getscheduler), I(sched_get_priority_max),
	I(sched_get_priority_min), I(sched_rr_get_interval),
	/* mlock/mlockall fault every page in */
	A(mlock), I(munlock), A(mlockall), I(munlockall), A(vhangup),
	I(modify_ldt), A(pivot_root),
	/* removed calls: the kernel answers ENOSYS at once */
	I(_sysctl), P(prctl), I(arch_prctl), I(adjtimex), I(setrlimit),
	A(chroot), A(sync), A(acct), I(settimeofday), A(mount), A(umount2),
	A(swapon), A(swapoff),
	/* reboot syncs file systems first */
	A(reboot), I(sethostname), I(setdomainname),
	/* I/O privilege level and port bitmap are per thread */
	I(iopl), I(ioperm), I(create_module), A(init_module), A(delete_module),
	I(get_kernel_syms), I(query_module), A(quotactl), I(nfsservctl),
	I(getpmsg), I(putpmsg), I(afs_syscall), I(tuxcall), I(security),
	I(gettid),
	/* readahead may read metadata synchronously */
	A(readahead), A(setxattr), A(lsetxattr), A(fsetxattr), A(getxattr),
	A(lgetxattr), A(fgetxattr), A(listxattr), A(llistxattr), A(flistxattr),
	A(removexattr), A(lremovexattr), A(fremovexattr), I(tkill), I(time),
	T(futex, SK_FUTEX), I(sched_setaffinity), I(sched_getaffinity),
	/* TLS descriptors of the calling thread */
	I(set_thread_area), I(io_setup),
	/* io_destroy waits for the context's I/O to finish */
	A(io_destroy),
	/* io_getevents: a try would consume events the real call must return */
	A(io_getevents),
	/* io_submit of buffered I/O runs it synchronously */
	A(io_submit), I(io_cancel), I(get_thread_area), I(lookup_dcookie),
	F(epoll_create), I(epoll_ctl_old), I(epoll_wait_old),
	/* remap_file_pages populates the new mapping */
	A(remap_file_pages), A(getdents64), I(set_tid_address),
	I(restart_syscall), A(semtimedop),
	/* fadvise64(WILLNEED) may read metadata synchronously */
	A(fadvise64), I(timer_create), I(timer_settime), I(timer_gettime),
	I(timer_getoverrun), I(timer_delete), I(clock_settime),
	I(clock_gettime), I(clock_getres),
	T(clock_nanosleep, SK_CLOCK_NANOSLEEP), I(exit_group),
	T(epoll_wait, SK_EPOLL_WAIT), I(epoll_ctl), I(tgkill), A(utimes),
	I(vserver),
	/* mbind(MPOL_MF_MOVE) migrates pages */
	A(mbind),
	/* the memory policy is the calling thread's */
	I(set_mempolicy), I(get_mempolicy), A(mq_open), A(mq_unlink),
	T(mq_timedsend, SK_MQ), T(mq_timedreceive, SK_MQ), I(mq_notify),
	I(mq_getsetattr), A(kexec_load), T(waitid, SK_WAITID),
	/* keys: thread keyrings belong to the calling thread; upcalls block it */
	I(add_key), I(request_key), I(keyctl),
	/* IOPRIO_WHO_PROCESS 0 is the calling thread */
	I(ioprio_set), I(ioprio_get), F(inotify_init), A(inotify_add_watch),
	I(inotify_rm_watch), A(migrate_pages), T(openat, SK_OPENAT), A(mkdirat),
	A(mknodat), A(fchownat), A(futimesat), A(newfstatat), A(unlinkat),
	A(renameat), A(linkat), A(symlinkat), A(readlinkat), A(fchmodat),
	A(faccessat), T(pselect6, SK_PSELECT6), T(ppoll, SK_PPOLL),
	/* namespaces, robust futex list: the calling thread's */
	P(unshare), I(set_robust_list), I(get_robust_list),
	/* splice/tee/vmsplice: SPLICE_F_NONBLOCK covers only the pipe side */
	A(splice), A(tee), A(sync_file_range), A(vmsplice), A(move_pages),
	A(utimensat), T(epoll_pwait, SK_EPOLL_PWAIT), F(signalfd),
	F(timerfd_create), F(eventfd), A(fallocate), I(timerfd_settime),
	I(timerfd_gettime), T(accept4, SK_ACCEPT), F(signalfd4), F(eventfd2),
	F(epoll_create1), F(dup3), F(pipe2), F(inotify_init1),
	T(preadv, SK_PREADV), T(pwritev, SK_PWRITEV), I(rt_tgsigqueueinfo),
	/* perf_event_open(pid 0) measures the calling thread */
	F(perf_event_open),
	/* recvmmsg/sendmmsg: per-message counts and timeouts have no exact try */
	A(recvmmsg), F(fanotify_init), A(fanotify_mark), I(prlimit64),
	A(name_to_handle_at), A(open_by_handle_at), I(clock_adjtime), A(syncfs),
	A(sendmmsg), P(setns),
	/* getcpu: the CPU the calling thread runs on */
	I(getcpu),
	/* process_vm_*: the other process's pages may be swapped out */
	A(process_vm_readv), A(process_vm_writev), I(kcmp), A(finit_module),
	P(sched_setattr), I(sched_getattr), A(renameat2), P(seccomp),
	I(getrandom), F(memfd_create), A(kexec_file_load),
	/* bpf(BPF_OBJ_GET/PIN) look up paths */
	A(bpf), I(execveat), F(userfaultfd),
	/* membarrier orders the calling thread against the others */
	I(membarrier), A(mlock2), A(copy_file_range), T(preadv2, SK_PREADV2),
	T(pwritev2, SK_PWRITEV2), I(pkey_mprotect),
	/* protection keys: pkey_alloc sets the calling thread's PKRU */
	I(pkey_alloc), I(pkey_free), A(statx), A(io_pgetevents), I(rseq),
	/* 424 */
	I(pidfd_send_signal),
	/* io_uring: a ring may be bound to its submitter (SINGLE_ISSUER), its task
 * work runs on the calling thread, and a wait blocks that thread */
	F(io_uring_setup), I(io_uring_enter), I(io_uring_register),
	A(open_tree), A(move_mount), A(fsopen), A(fsconfig), A(fsmount),
	A(fspick), F(pidfd_open), P(clone3), F(close_range),
	T(openat2, SK_OPENAT2), F(pidfd_getfd), A(faccessat2),
	A(process_madvise), T(epoll_pwait2, SK_EPOLL_PWAIT2), A(mount_setattr),
	A(quotactl_fd),
	/* landlock_restrict_self restricts the calling thread */
	I(landlock_create_ruleset), I(landlock_add_rule),
	P(landlock_restrict_self), F(memfd_secret),
	/* process_mrelease reaps the whole address space now */
	A(process_mrelease), T(futex_waitv, SK_FUTEX_WAITV),
	I(set_mempolicy_home_node),
	/* 451: Linux 6.5 and later */
	I(cachestat), A(fchmodat2), I(map_shadow_stack), I(futex_wake),
	T(futex_wait, SK_FUTEX_WAIT), I(futex_requeue), A(statmount),
	A(listmount),
	/* LSM attributes of the calling thread */
	I(lsm_get_self_attr), I(lsm_set_self_attr), I(lsm_list_modules),
	I(mseal), A(setxattrat), A(getxattrat), A(listxattrat),
	A(removexattrat), A(open_tree_attr), A(file_getattr), A(file_setattr),

#undef I
#undef A
#undef T
#undef F
#undef P
