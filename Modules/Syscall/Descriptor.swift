#if canImport(Glibc)
import Glibc
#endif

/// Calls on a raw descriptor a wrapper owns itself (a device node whose life its own type manages), each through
/// ``syscall(_:path:_:)``: EINTR retried, errno typed, EBADF and EFAULT trapping as programmer errors.
public enum Descriptor {
    /// open(2), close-on-exec always.
    public static func open(_ path: String, _ flags: Int32) throws(SystemError) -> Int32 {
        try syscall("open", path: path) { Glibc.open(path, flags | O_CLOEXEC) }
    }

    /// close(2); a close is never retried (Linux has released the descriptor even when it reports EINTR).
    public static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Reads `buffer.count` bytes of `fd` at `offset` (retrying short reads); the bytes read (fewer only at end of file).
    public static func read(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String? = nil
    ) throws(SystemError) -> Int {
        var off = 0
        while off < buffer.count {
            let n = try syscall("pread", path: path) {
                Glibc.pread(fd, buffer.baseAddress! + off, buffer.count - off, off_t(offset) + off_t(off))
            }
            if n == 0 { break }
            off += n
        }
        return off
    }

    /// Waits up to `timeoutMs` (negative: for ever) for `events` on `fd`; the events that came (0: none).
    public static func poll(_ fd: Int32, events: Int16, timeoutMs: Int32, path: String? = nil) throws(SystemError)
        -> Int16
    {
        var p = pollfd(fd: fd, events: events, revents: 0)
        let ready = try syscall("poll", path: path) { Glibc.poll(&p, 1, timeoutMs) }
        return ready == 0 ? 0 : p.revents
    }

    /// An ioctl through `call` (a C shim that passes the argument on), retried on EINTR; its non-negative result.
    @discardableResult
    public static func ioctl(_ name: @autoclosure () -> String, path: String, _ call: () -> Int32) throws(SystemError)
        -> Int32
    {
        try syscall(name(), path: path, call)
    }

    /// mmap(2) of `length` bytes of `fd` at `offset`, shared, read-write.
    public static func map(_ fd: Int32, length: Int, offset: Int64, path: String) throws(SystemError)
        -> UnsafeMutableRawPointer
    {
        let p = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
        guard let p, p != MAP_FAILED else { throw SystemError(errno: errno, operation: "mmap", path: path) }
        return p
    }

    /// munmap(2).
    public static func unmap(_ base: UnsafeMutableRawPointer, length: Int) { _ = munmap(base, length) }
}
