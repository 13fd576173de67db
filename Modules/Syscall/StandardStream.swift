#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation

/// Writing to a standard stream (the command line's own output).
public enum StandardStream {
    /// Writes every byte of `bytes` to `fd` (EINTR retried); false when the stream refused them (closed, or a broken
    /// pipe). Never traps: a tool whose stdout was closed keeps working.
    @discardableResult
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + off, bytes.count - off)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            off += n
        }
        return true
    }

    /// Reads up to `buffer.count` bytes from `fd` (EINTR retried): the count, 0 at end of stream, -1 on an error.
    public static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress!, buffer.count)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }
}
