import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

    /// `text` as a terminal shows it harmlessly: control characters other than newline and tab (ESC and the sequences it
    /// starts — a title, a cleared screen, a moved cursor — a carriage return that overwrites a line, BEL, DEL, the C1
    /// set) and the bidirectional overrides that reorder what is shown are written as `\u{1B}`. A name from the network
    /// (a DNS-SD advertisement, a peer's reason) reaches the operator's terminal as what it is, never as commands to
    /// it. With `newlines`, newline and tab too: one line can then not pass for two.
    public static func visible(_ text: String, newlines: Bool = false) -> String {
        func harmful(_ u: Unicode.Scalar) -> Bool {
            switch u.value {
            case 0x0A, 0x09: return newlines
            case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
            default: return false
            }
        }
        guard text.unicodeScalars.contains(where: harmful) else { return text }  // the usual case: no copy
        var out = String.UnicodeScalarView()
        for u in text.unicodeScalars {
            if harmful(u) {
                out.append(contentsOf: "\\u{\(String(u.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(u)
            }
        }
        return String(out)
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
