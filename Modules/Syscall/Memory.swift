import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

/// The process's limit on open file descriptors.
public enum FileLimit {
    /// Raises the soft limit on open descriptors to the hard one and returns both as they are now. A service starts
    /// with a soft limit of 1 024 (systemd's default) whatever the hard limit allows; a host holding a connection per
    /// device, its files and a studio's pages should have what it is allowed.
    @discardableResult
    public static func raiseToHard() -> (soft: Int, hard: Int) {
        var l = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &l) == 0 else { return (0, 0) }
        if l.rlim_cur < l.rlim_max {
            var raised = l
            raised.rlim_cur = l.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { l = raised }
        }
        return (Int(clamping: l.rlim_cur), Int(clamping: l.rlim_max))
    }

    /// The soft limit now.
    public static var soft: Int {
        var l = rlimit()
        return getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &l) == 0 ? Int(clamping: l.rlim_cur) : 0
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
