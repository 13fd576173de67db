import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

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
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(SystemError) -> FileDescriptor
    {
        let fd = try syscall("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(adopting: fd, path: path)
    }

    /// Opens `path` for reading only if it is a regular file: a FIFO, a device or a socket where a file should be (a
    /// careless or hostile hand in a library or an outbox) is refused at once, naming what it is, instead of a read
    /// that waits for a writer for ever. (O_NONBLOCK lets the open itself return; on a regular file it changes nothing.)
    public static func openRegularFile(_ path: String) throws(SystemError) -> FileDescriptor {
        let fd = try open(path, O_RDONLY | O_NONBLOCK)
        let kind = try fd.status().st_mode & S_IFMT
        guard kind == S_IFREG else {
            let what =
                [
                    S_IFIFO: "a FIFO", S_IFCHR: "a character device", S_IFBLK: "a block device", S_IFSOCK: "a socket",
                    S_IFDIR: "a directory",
                ][kind] ?? "not a file"
            throw SystemError(
                errno: kind == S_IFDIR ? EISDIR : EINVAL, operation: "open (\(what), not a regular file)", path: path)
        }
        return fd
    }

    /// Opens a directory for fsync and *at() calls.
    public static func openDirectory(_ path: String) throws(SystemError) -> FileDescriptor {
        try open(path, O_RDONLY | O_DIRECTORY)
    }

    /// Writes all of `bytes` (retrying short writes).
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var off = 0
        while off < bytes.count {
            let n = try syscall("write", path: path) {
                Glibc.write(rawValue, bytes.baseAddress! + off, bytes.count - off)
            }
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
        try syscall("sync_file_range", path: path) {
            ppc_sync_file_range(rawValue, offset, count, Self.syncFileRangeWrite)
        }
    }

    /// Waits until a range's pages, written back as `startWriteback` asked, are on storage (starting any not yet
    /// started). Data only: the file's metadata still needs `syncData()`.
    /// sync_file_range(2)'s flags (linux/fs.h): SYNC_FILE_RANGE_WRITE, and WAIT_BEFORE | WRITE | WAIT_AFTER.
    static let syncFileRangeWrite: UInt32 = 2
    static let syncFileRangeWaitWriteWait: UInt32 = 7

    public func awaitWriteback(offset: Int64, count: Int64) throws(SystemError) {
        try syscall("sync_file_range", path: path) {
            ppc_sync_file_range(rawValue, offset, count, Self.syncFileRangeWaitWriteWait)
        }
    }

    /// Flushes data and all metadata (used on directories after a rename or unlink).
    public func sync() throws(SystemError) {
        try syscall("fsync", path: path) { fsync(rawValue) }
    }

    public func size() throws(SystemError) -> Int64 {
        Int64(try status().st_size)
    }

    /// What fstat(2) says of it: type, size, times.
    public func status() throws(SystemError) -> stat {
        var st = stat()
        try syscall("fstat", path: path) { fstat(rawValue, &st) }
        return st
    }

    public func truncate(_ length: Int64) throws(SystemError) {
        try syscall("ftruncate", path: path) { ftruncate(rawValue, off_t(length)) }
    }
}
