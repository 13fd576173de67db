#if canImport(Glibc)
import Glibc
#endif

/// An exclusive hold on a directory: `flock(LOCK_EX | LOCK_NB)` on `DIR/.lock`, which also records the holder's pid.
///
/// Two processes that would write one ring, one outbox or one set of clips must never run at once: the second is refused
/// at once, naming the first's pid. The kernel drops the lock when the holder's descriptor closes — at exit, at a crash,
/// at kill -9 — so a dead holder never blocks the next run (the pid in the file is only a note for people). Keep the
/// object alive for as long as the hold must last (`defer { lock.release() }`).
public final class DirectoryLock: @unchecked Sendable {
    // @unchecked: `fd` is written once in init and then only by `release`, which the owner calls once.
    var fd: Int32
    public let path: String

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Takes the lock on `directory` (created if missing); throws ``Held`` when another process holds it.
    public static func acquire(_ directory: String, purpose: String) throws -> DirectoryLock {
        try FileSystem.makeDirectory(directory)
        let path = "\(directory)/.lock"
        let fd = try syscall("open", path: path) { Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644) }
        let lock = DirectoryLock(fd: fd, path: path)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            guard e == EWOULDBLOCK else { throw SystemError(errno: e, operation: "flock", path: path) }
            var buffer = [UInt8](repeating: 0, count: 256)
            let n = max(0, buffer.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, $0.count, 0) })
            var holder = String(decoding: buffer[0..<n], as: UTF8.self)
            while holder.last == "\n" { holder.removeLast() }
            throw Held(directory: directory, holder: holder.isEmpty ? "another process" : holder)
        }
        let note = Array("pid \(getpid()) (\(purpose))\n".utf8)
        try syscall("ftruncate", path: path) { ftruncate(fd, 0) }
        _ = note.withUnsafeBytes { Glibc.pwrite(fd, $0.baseAddress, $0.count, 0) }
        return lock
    }

    deinit { release() }

    /// Gives the lock up now (it is also given up when this object goes away, or the process ends).
    public func release() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Another process holds the directory.
    public struct Held: Error, Sendable, CustomStringConvertible {
        public let directory: String
        public let holder: String
        public var description: String {
            "\(directory) is in use by \(holder): two processes on one output directory would write one ring and one outbox; wait for it to end or choose another directory"
        }
    }
}
