"""containerd's default seccomp profile (`RuntimeDefault`), as data, for x86_64 and aarch64.

The lists are the syscall names of containerd's `contrib/seccomp` default profile: those
every container may call, those each capability in the bounding set adds, the socket and
personality argument rules, and `clone`/`clone3` without CAP_SYS_ADMIN. runc skips names
its libseccomp does not know. `profile()` builds the OCI `linux.seccomp` object.
"""

from __future__ import annotations

import platform
from typing import Any, Final

__all__ = ["profile"]


ALLOWED: Final = tuple(
    """
    accept accept4 access adjtimex alarm bind brk cachestat capget capset chdir chmod chown
    chown32 clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime
    clock_gettime64 clock_nanosleep clock_nanosleep_time64 close close_range connect
    copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old
    epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit
    exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir
    fchmod fchmodat fchmodat2 fchown fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr
    flistxattr flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64
    fsync ftruncate ftruncate64 futex futex_requeue futex_time64 futex_wait futex_waitv
    futex_wake futimesat getcpu getcwd getdents getdents64 getegid getegid32 geteuid
    geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid getpgrp
    getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32
    getrlimit get_robust_list getrusage getsid getsockname getsockopt get_thread_area gettid
    gettimeofday getuid getuid32 getxattr getxattrat inotify_add_watch inotify_init
    inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents
    io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit ipc kill landlock_add_rule
    landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr link linkat
    listen listmount listxattr listxattrat llistxattr _llseek lremovexattr lseek lsetxattr
    lsm_get_self_attr lsm_list_modules lsm_set_self_attr lstat lstat64 madvise membarrier
    memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall
    map_shadow_stack mmap mmap2 mprotect mq_getsetattr mq_notify mq_open mq_timedreceive
    mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink mremap mseal msgctl
    msgget msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep
    newfstatat _newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2
    pkey_alloc pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2
    prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 pwritev pwritev2 read
    readahead readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg
    remap_file_pages removexattr removexattrat rename renameat renameat2 restart_syscall
    rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn
    rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity
    sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min
    sched_getscheduler sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity
    sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select semctl semget
    semop semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto
    setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer
    setpgid setpriority setregid setregid32 setresgid setresgid32 setresuid setresuid32
    setreuid setreuid32 setrlimit set_robust_list setsid setsockopt set_thread_area
    set_tid_address setuid setuid32 setxattr setxattrat shmat shmctl shmdt shmget shutdown
    sigaltstack signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat
    stat64 statfs statfs64 statmount statx symlink symlinkat sync sync_file_range syncfs
    sysinfo tee tgkill time timer_create timer_delete timer_getoverrun timer_gettime
    timer_gettime64 timer_settime timer_settime64 timerfd_create timerfd_gettime
    timerfd_gettime64 timerfd_settime timerfd_settime64 times tkill truncate truncate64
    ugetrlimit umask uname unlink unlinkat uretprobe utime utimensat utimensat_time64 utimes
    vfork vmsplice wait4 waitid waitpid write writev
    """.split()
)

# Allowed on kernels from 4.8 on (every kernel this runs on).
PTRACE: Final = ("process_vm_readv", "process_vm_writev", "ptrace")

BY_ARCH: Final = {
    "x86_64": ("arch_prctl", "modify_ldt"),
    "aarch64": (
        "arm_fadvise64_64",
        "arm_sync_file_range",
        "sync_file_range2",
        "breakpoint",
        "cacheflush",
        "set_tls",
    ),
}

# What each capability in the bounding set adds.
BY_CAPABILITY: Final = {
    "CAP_DAC_READ_SEARCH": ("open_by_handle_at",),
    "CAP_SYS_ADMIN": tuple(
        """
        bpf clone clone3 fanotify_init fsconfig fsmount fsopen fspick lookup_dcookie mount
        mount_setattr move_mount open_tree perf_event_open quotactl quotactl_fd
        setdomainname sethostname setns syslog umount umount2 unshare
        """.split()
    ),
    "CAP_SYS_BOOT": ("reboot",),
    "CAP_SYS_CHROOT": ("chroot",),
    "CAP_SYS_MODULE": ("delete_module", "init_module", "finit_module"),
    "CAP_SYS_PACCT": ("acct",),
    "CAP_SYS_PTRACE": tuple(
        """
        kcmp pidfd_getfd process_madvise process_vm_readv process_vm_writev ptrace
        """.split()
    ),
    "CAP_SYS_RAWIO": ("iopl", "ioperm"),
    "CAP_SYS_TIME": ("settimeofday", "stime", "clock_settime", "clock_settime64"),
    "CAP_SYS_TTY_CONFIG": ("vhangup",),
    "CAP_SYS_NICE": ("get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"),
    "CAP_SYSLOG": ("syslog",),
    "CAP_BPF": ("bpf",),
    "CAP_PERFMON": ("perf_event_open",),
}

CLONE_NAMESPACES: Final = 0x7E020000  # CLONE_NEWNS|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWCGROUP
AF_ALG: Final = 38
AF_VSOCK: Final = 40
ENOSYS: Final = 38
ARCHITECTURES: Final = {
    "x86_64": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "aarch64": ["SCMP_ARCH_ARM", "SCMP_ARCH_AARCH64"],
}
# personality(2) values a container may set: PER_LINUX, UNAME26, PER_LINUX32, their union
# with UNAME26, and the query.
PERSONALITIES: Final = (0x0, 0x0008, 0x20000, 0x20008, 0xFFFFFFFF)


def _allow(names: tuple[str, ...] | list[str], *args: dict[str, Any]) -> dict[str, Any]:
    return {"names": list(names), "action": "SCMP_ACT_ALLOW", "args": list(args)}


def _arg(index: int, value: int, op: str, value_two: int = 0) -> dict[str, Any]:
    return {"index": index, "value": value, "valueTwo": value_two, "op": op}


def profile(bounding: list[str], machine: str | None = None) -> dict[str, Any]:
    """The OCI `linux.seccomp` of containerd's default profile for a container whose
    bounding capability set is `bounding` (names like `CAP_SYS_ADMIN`)."""
    arch = machine or platform.machine()
    rules = [
        _allow(ALLOWED),
        # socket(2) for every address family but AF_ALG and AF_VSOCK.
        _allow(["socket"], _arg(0, AF_ALG, "SCMP_CMP_LT")),
        _allow(["socket"], _arg(0, AF_ALG + 1, "SCMP_CMP_EQ")),
        _allow(["socket"], _arg(0, AF_VSOCK, "SCMP_CMP_GT")),
        *(_allow(["personality"], _arg(0, v, "SCMP_CMP_EQ")) for v in PERSONALITIES),
        _allow(PTRACE),
        _allow(BY_ARCH.get(arch, ())),
    ]
    rules += [_allow(BY_CAPABILITY[c]) for c in bounding if c in BY_CAPABILITY]
    if "CAP_SYS_ADMIN" not in bounding:
        rules.append(_allow(["clone"], _arg(0, CLONE_NAMESPACES, "SCMP_CMP_MASKED_EQ")))
        rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS})
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "architectures": ARCHITECTURES.get(arch, []),
        "syscalls": [r for r in rules if r["names"]],
    }
