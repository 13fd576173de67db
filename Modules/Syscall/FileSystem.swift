import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Small filesystem operations, each through ``syscall(_:path:_:)``.
public enum FileSystem {
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        do {
            try syscall("mkdir", path: path) { mkdir(path, mode) }
        } catch  where error.errno == EEXIST {
            return
        }
    }

    /// Makes `path` and every missing directory above it (`mkdir -p`). A failure names the component and errno — where
    /// Foundation's own message says only "the file doesn't exist" — and a file in the way is ENOTDIR on that file.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            try makeDirectory(prefix, mode: mode)
            var st = stat()
            try syscall("stat", path: prefix) { stat(prefix, &st) }
            if st.st_mode & S_IFMT != S_IFDIR { throw SystemError(errno: ENOTDIR, operation: "mkdir", path: prefix) }
        }
    }

    /// The whole of a small file — a manifest, a state file — or a pipe's output (`<(…)`), read to its end. A directory
    /// is EISDIR and a file over `limit` bytes (or a device that never ends, /dev/zero) EFBIG, each naming the path.
    ///
    /// `regularFileOnly`: a file of a clip, a library or an outbox, never a pipe — a FIFO there (a careless or hostile
    /// hand) is refused at once (`FileDescriptor.openRegularFile`) rather than waited on for ever.
    public static func readSmallFile(_ path: String, limit: Int, regularFileOnly: Bool = false) throws(SystemError)
        -> [UInt8]
    {
        let fd = regularFileOnly ? try FileDescriptor.openRegularFile(path) : try FileDescriptor.open(path, O_RDONLY)
        let raw = fd.rawValue
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let n = try syscall("read", path: path) { Glibc.read(raw, chunk.baseAddress!, chunk.count) }
            if n == 0 { break }
            bytes += chunk[..<n]
            if bytes.count > limit {
                throw SystemError(errno: EFBIG, operation: "read (more than \(limit) bytes)", path: path)
            }
        }
        _ = consume fd
        return bytes
    }

    public static func unlink(_ path: String) throws(SystemError) {
        try syscall("unlink", path: path) { Glibc.unlink(path) }
    }

    /// Unlinks `path` if it exists.
    public static func removeIfPresent(_ path: String) throws(SystemError) {
        do { try unlink(path) } catch  where error.errno == ENOENT {}
    }

    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        try syscall("rename", path: "\(from) → \(to)") { Glibc.rename(from, to) }
    }

    public static func link(_ from: String, _ to: String) throws(SystemError) {
        try syscall("link", path: "\(from) → \(to)") { Glibc.link(from, to) }
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Whether `a` and `b` name the same file or directory (one device, one inode), however each is spelled: relative
    /// or absolute, through a symbolic link, with `./` or `//`. False when either does not exist.
    public static func sameFile(_ a: String, _ b: String) -> Bool {
        var sa = stat()
        var sb = stat()
        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }

    /// Whether `path` is a regular file (following symbolic links).
    public static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// sync(2): every filesystem's dirty data to its device (benchmarks settle the disk between stages with it).
    public static func syncEverything() { Glibc.sync() }

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
        } catch  where error.errno == EXDEV || error.errno == EPERM || error.errno == EMLINK {}
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
