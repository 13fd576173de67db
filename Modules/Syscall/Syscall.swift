#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation

/// A system call failed for a reason of the environment (a missing file, a full disk, a busy device).
/// Carries errno, the operation and the path, so a message can say what was being done to what.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let errno: Int32
    public let operation: String
    public let path: String?

    public init(errno: Int32, operation: String, path: String? = nil) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(operation) \(path): \(reason) (errno \(errno))" }
        return "\(operation): \(reason) (errno \(errno))"
    }
}

/// Runs a system call, retrying on EINTR. A result of -1 becomes a ``SystemError``; EBADF and EFAULT are programmer
/// errors and trap.
@inlinable
@discardableResult
public func syscall<T: FixedWidthInteger>(
    _ operation: @autoclosure () -> String, path: @autoclosure () -> String? = nil, _ body: () -> T
) throws(SystemError) -> T {
    while true {
        let r = body()
        if r != -1 { return r }
        let e = errno
        if e == EINTR { continue }
        precondition(e != EBADF && e != EFAULT, "\(operation()): programmer error, errno \(e)")
        throw SystemError(errno: e, operation: operation(), path: path())
    }
}

/// An open file descriptor, closed exactly once when the value is consumed or dropped.
public struct FileDescriptor: ~Copyable, Sendable {
    public let rawValue: Int32
    /// The path it was opened with, for messages.
    public let path: String

    public init(adopting fd: Int32, path: String) {
        self.rawValue = fd
        self.path = path
    }

    deinit { _ = Glibc.close(rawValue) }

    /// Opens `path` with `flags` (O_CLOEXEC is always added) and `mode` for O_CREAT.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(SystemError) -> FileDescriptor {
        let fd = try syscall("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(adopting: fd, path: path)
    }

    /// Opens a directory for fsync and *at() calls.
    public static func openDirectory(_ path: String) throws(SystemError) -> FileDescriptor {
        try open(path, O_RDONLY | O_DIRECTORY)
    }

    /// Writes all of `bytes` (retrying short writes).
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var off = 0
        while off < bytes.count {
            let n = try syscall("write", path: path) { Glibc.write(rawValue, bytes.baseAddress! + off, bytes.count - off) }
            off += n
        }
    }

    /// Writes all of `bytes` at `offset` (retrying short writes).
    public func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var off = 0
        while off < bytes.count {
            let n = try syscall("pwrite", path: path) {
                Glibc.pwrite(rawValue, bytes.baseAddress! + off, bytes.count - off, off_t(offset) + off_t(off))
            }
            off += n
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`; returns how many (0 at end of file).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) -> Int {
        var off = 0
        while off < buffer.count {
            let n = try syscall("pread", path: path) {
                Glibc.pread(rawValue, buffer.baseAddress! + off, buffer.count - off, off_t(offset) + off_t(off))
            }
            if n == 0 { break }
            off += n
        }
        return off
    }

    /// Flushes file data (and the metadata needed to read it back) to stable storage.
    public func syncData() throws(SystemError) {
        try syscall("fdatasync", path: path) { fdatasync(rawValue) }
    }

    /// Reserves storage for a range of the file (extending it if needed), so writing there later cannot fail for want
    /// of space and needs no block allocation on the way.
    public func reserve(offset: Int64, count: Int64) throws(SystemError) {
        guard count > 0 else { return }
        let r = posix_fallocate(rawValue, off_t(offset), off_t(count))
        if r != 0 { throw SystemError(errno: r, operation: "fallocate", path: path) }
    }

    /// Starts writing a range of the file's dirty pages (written or mapped) to storage, without waiting for them: the
    /// `syncData()` that makes the file durable later finds the work done or under way instead of all of it still to do.
    public func startWriteback(offset: Int64, count: Int64) throws(SystemError) {
        try syscall("sync_file_range", path: path) { ppc_sync_file_range(rawValue, offset, count, 2 /* SYNC_FILE_RANGE_WRITE */) }
    }

    /// Waits until a range's pages, written back as `startWriteback` asked, are on storage (starting any not yet
    /// started). Data only: the file's metadata still needs `syncData()`.
    public func awaitWriteback(offset: Int64, count: Int64) throws(SystemError) {
        try syscall("sync_file_range", path: path) { ppc_sync_file_range(rawValue, offset, count, 7 /* WAIT_BEFORE | WRITE | WAIT_AFTER */) }
    }

    /// Flushes data and all metadata (used on directories after a rename or unlink).
    public func sync() throws(SystemError) {
        try syscall("fsync", path: path) { fsync(rawValue) }
    }

    public func size() throws(SystemError) -> Int64 {
        var st = stat()
        try syscall("fstat", path: path) { fstat(rawValue, &st) }
        return Int64(st.st_size)
    }

    public func truncate(_ length: Int64) throws(SystemError) {
        try syscall("ftruncate", path: path) { ftruncate(rawValue, off_t(length)) }
    }
}

/// Small filesystem operations, each through ``syscall(_:path:_:)``.
public enum FileSystem {
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        do {
            try syscall("mkdir", path: path) { mkdir(path, mode) }
        } catch where error.errno == EEXIST {
            return
        }
    }

    public static func unlink(_ path: String) throws(SystemError) {
        try syscall("unlink", path: path) { Glibc.unlink(path) }
    }

    /// Unlinks `path` if it exists.
    public static func removeIfPresent(_ path: String) throws(SystemError) {
        do { try unlink(path) } catch where error.errno == ENOENT {}
    }

    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        try syscall("rename", path: "\(from) → \(to)") { Glibc.rename(from, to) }
    }

    public static func link(_ from: String, _ to: String) throws(SystemError) {
        try syscall("link", path: "\(from) → \(to)") { Glibc.link(from, to) }
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Writes `bytes` to `path` whole or not at all: to `path.tmp`, fsynced, then renamed over `path` and the directory
    /// fsynced. On failure the temporary file is removed and the error names the file and the reason (a full disk:
    /// "write PATH.tmp: No space left on device"); `path` keeps what it held before.
    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws(SystemError) {
        let tmp = path + ".tmp"
        do throws(SystemError) {
            let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
            var failure: SystemError?
            bytes.withUnsafeBytes { b in
                do throws(SystemError) { try fd.writeAll(b) } catch { failure = error }
            }
            if let failure { throw failure }
            try fd.sync()
            try rename(tmp, path)
        } catch {
            try? removeIfPresent(tmp)
            throw error
        }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        try? syncDirectory(directory.isEmpty ? "." : directory)
    }

    /// Names in a directory, without "." and "..".
    public static func list(_ path: String) throws(SystemError) -> [String] {
        guard let dir = opendir(path) else { throw SystemError(errno: errno, operation: "opendir", path: path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Fsyncs a directory so that renames and unlinks in it are durable.
    public static func syncDirectory(_ path: String) throws(SystemError) {
        let fd = try FileDescriptor.openDirectory(path)
        try fd.sync()
    }

    /// Copies `from` to a new file `to` without passing the bytes through user space: a hard link when both are on one
    /// filesystem, else a reflink (FICLONE), else an in-kernel copy (sendfile). Returns which one was used.
    public static func cloneFile(_ from: String, _ to: String) throws(SystemError) -> CloneMethod {
        do {
            try link(from, to)
            return .hardLink
        } catch where error.errno == EXDEV || error.errno == EPERM || error.errno == EMLINK {}
        let src = try FileDescriptor.open(from, O_RDONLY)
        let dst = try FileDescriptor.open(to, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        let ficlone: UInt = 0x4004_9409
        if ioctl(dst.rawValue, ficlone, src.rawValue) == 0 { return .reflink }
        var remaining = try src.size()
        while remaining > 0 {
            let n = try syscall("sendfile", path: "\(from) → \(to)") {
                sendfile(dst.rawValue, src.rawValue, nil, Int(min(remaining, 1 << 30)))
            }
            if n == 0 { break }
            remaining -= Int64(n)
        }
        return .kernelCopy
    }

    /// The filesystem type (ext4, xfs, tmpfs, …) `path` lives on, from the longest matching mount point in
    /// /proc/self/mounts; nil if it cannot be told.
    public static func mountType(of path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        let target = String(cString: real)
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return nil }
        var best: (String, String)?
        for line in mounts.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 3 else { continue }
            let point = String(f[1])
            let within = target == point || target.hasPrefix(point == "/" ? "/" : point + "/")
            if within, best == nil || point.count > best!.0.count { best = (point, String(f[2])) }
        }
        return best?.1
    }

    public enum CloneMethod: String, Sendable {
        case hardLink = "hard-link"
        case reflink
        /// sendfile(2): copied inside the kernel, not through user space.
        case kernelCopy = "kernel-copy"
    }
}

/// Sleeps `ns` nanoseconds on CLOCK_MONOTONIC, resuming after signals. For pacing (heartbeats, transfer budgets,
/// backoff) — never as a way to wait for another thread.
public func sleepNs(_ ns: Int64) {
    guard ns > 0 else { return }
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let due = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) + ns
    var ts = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Sleeps until `deadlineNs` on CLOCK_MONOTONIC (no-op if it has passed).
public func sleepUntilNs(_ deadlineNs: Int64) {
    var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Nanoseconds on CLOCK_MONOTONIC: the capture clock.
@inlinable
/// CLOCK_BOOTTIME now, ns: like CLOCK_MONOTONIC but it also counts time the machine spent suspended, so a gap in it
/// shows a process that was stopped (SIGSTOP) or a machine that slept.
public func bootNowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_BOOTTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

public func monotonicNowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Process-wide memory policy for a capture engine.
public enum MemoryPolicy {
    /// Keeps freed heap memory in the process instead of returning it to the kernel, so buffers freed and allocated
    /// again (a snapshot per shot, a frame pool refilled) reuse pages already faulted in rather than faulting fresh,
    /// zeroed ones — in a VM each fault is an exit. Costs: the process's resident size stays at its high-water mark.
    /// Called once at start by the tools; measured effect in Modules/TimelineIndex/README.md.
    public static func keepFreedMemory() {
        _ = mallopt(M_TRIM_THRESHOLD, 512 << 20)
        _ = mallopt(M_MMAP_THRESHOLD, 32 << 20)
    }
}

/// A file mapped into memory (MAP_SHARED), unmapped when released. Bytes written through a writable mapping are the
/// file's page cache: `FileDescriptor.syncData()` makes them durable like any write.
public final class FileMapping: @unchecked Sendable {
    // @unchecked: one owner at a time; the memory is the file's.
    public let bytes: UnsafeMutableRawBufferPointer

    /// Maps the first `length` bytes of `fd` (which must be at least that long). A zero length maps nothing.
    public init(_ fd: borrowing FileDescriptor, length: Int, writable: Bool) throws(SystemError) {
        guard length > 0 else {
            bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
            return
        }
        let p = mmap(nil, length, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd.rawValue, 0)
        guard let p, p != MAP_FAILED else { throw SystemError(errno: errno, operation: "mmap", path: fd.path) }
        bytes = UnsafeMutableRawBufferPointer(start: p, count: length)
    }

    /// Writes the mapping's dirty pages to the device and waits (msync MS_SYNC).
    public func sync() throws(SystemError) {
        guard let b = bytes.baseAddress else { return }
        if msync(b, bytes.count, MS_SYNC) != 0 { throw SystemError(errno: errno, operation: "msync") }
    }

    deinit { if let b = bytes.baseAddress { munmap(b, bytes.count) } }
}

/// This process's memory as the kernel counts it (/proc/self/status).
public enum ProcessMemory {
    /// A `kB` field of /proc/self/status in bytes: `VmRSS` (resident now), `VmHWM` (resident at its peak); nil if absent.
    public static func bytes(_ field: String) -> Int64? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return nil }
        return line.split(separator: " ").compactMap { Int64($0) }.first.map { $0 * 1024 }
    }
}

/// Scheduling priority of the calling thread.
public enum ThreadPriority {
    /// Raises the calling thread's priority (lower nice value) so capture runs ahead of merge and mint work
    /// (seed 000 gave the capture callback the highest tier). Returns what the OS granted, in words, for the report:
    /// an unprivileged process may not lower its nice value, and that is said, not hidden.
    @discardableResult
    public static func raiseCurrent(nice: Int32 = -10) -> String {
        let tid = id_t(ppc_gettid())
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let before = getpriority(which, tid)
        if setpriority(which, tid, nice) == 0 {
            return "nice \(getpriority(which, tid)) (raised from \(before))"
        }
        let reason = String(cString: strerror(errno))
        return "nice \(before) (asked for \(nice): \(reason))"
    }

    /// Lowers the calling thread's priority (mint, merge and bulk-transfer work yield to capture and to control
    /// messages). Not undone: an unprivileged thread may not raise itself again, so call it on a thread of its own.
    @discardableResult
    public static func lowerCurrent(nice: Int32 = 5) -> String {
        let tid = id_t(ppc_gettid())
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        _ = setpriority(which, tid, nice)
        return "nice \(getpriority(which, tid))"
    }

    /// The CPUs the calling thread may run on, in order (`ofProcess`: those the process's main thread may, which
    /// confinement is judged against, so confining twice changes nothing).
    public static func allowedCores(ofProcess: Bool = false) -> [Int] {
        var mask = [UInt](repeating: 0, count: 16)  // 1024 CPUs
        let tid = ofProcess ? Int32(getpid()) : 0
        let got = mask.withUnsafeMutableBufferPointer { ppc_getaffinity(tid, $0.baseAddress, UInt($0.count * MemoryLayout<UInt>.size)) }
        guard got > 0 else { return [] }
        var out: [Int] = []
        for (w, word) in mask.enumerated() where word != 0 {
            for b in 0..<UInt.bitWidth where word & (1 << UInt(b)) != 0 { out.append(w * UInt.bitWidth + b) }
        }
        return out
    }

    /// Keeps the calling thread off the first CPU the process may use, when it may use two or more: bulk work (transfer copies,
    /// hashing, and the kernel's loopback and socket work, done on the sending thread's CPU) then never occupies every
    /// core, and a control message always finds one free to run on at once. `confined` says whether that held; `how`
    /// says what was done, in words, for the log.
    @discardableResult
    public static func confineToSpareCores() -> (confined: Bool, how: String) {
        let cores = allowedCores(ofProcess: true)
        guard cores.count >= 2 else { return (false, "on every core (\(cores.count) allowed: none to keep free)") }
        var mask = [UInt](repeating: 0, count: 16)
        for c in cores.dropFirst() { mask[c / UInt.bitWidth] |= 1 << UInt(c % UInt.bitWidth) }
        let r = mask.withUnsafeBufferPointer { ppc_setaffinity($0.baseAddress, UInt($0.count * MemoryLayout<UInt>.size)) }
        if r != 0 { return (false, "on every core (sched_setaffinity: \(String(cString: strerror(errno))))") }
        return (true, "on cores \(cores.dropFirst().map(String.init).joined(separator: ",")) (core \(cores[0]) kept free for control)")
    }
}

/// Signal hygiene for a tool's main.
public enum Signals {
    /// Unblocks every signal, and ignores SIGPIPE. A process spawned from a thread that had signals blocked (a libdispatch worker, say)
    /// inherits that mask and would then ignore SIGTERM: a host or device that cannot be stopped is worse than one
    /// that says it stopped.
    public static func unblockAll() {
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        // A peer that closes a socket (or a reader that closes a pipe) is an EPIPE error to handle, never a signal that
        // ends the process: every send already passes MSG_NOSIGNAL; this covers anything else that writes.
        signal(SIGPIPE, SIG_IGN)
    }
}

/// Network namespaces, for benches and tests that put a device and a host on two sides of a real (virtual) link.
public enum NetworkNamespace {
    /// Moves the calling thread into the network namespace at `path` (`/run/netns/NAME`, as `ip netns add` makes it).
    /// Threads the caller starts afterwards inherit it; sockets keep the namespace they were made in. Needs CAP_SYS_ADMIN.
    public static func enter(_ path: String) throws(SystemError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(errno: errno, operation: "open", path: path) }
        defer { close(fd) }
        guard ppc_setns(fd, 0x4000_0000 /* CLONE_NEWNET */) == 0 else { throw SystemError(errno: errno, operation: "setns", path: path) }
    }
}
