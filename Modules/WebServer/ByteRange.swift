/// What a request's `Range` header asks of a representation of `size` bytes, decided as RFC 9110 §14 says.
///
/// civetweb 1.15 answers some ranges wrongly, so the server decides every ranged request itself (measured
/// 2026-12-02 against Debian's libcivetweb 1.15): a last byte past the end (`bytes=0-99999999999`, `bytes=N-M` near
/// the end) was answered with a `Content-Length` one byte longer than it sent, so the client waited for a byte that
/// never came; a first byte past the end, or a last before the first, a 206 with neither length nor range; `bytes=-0`
/// the whole file as a 206; and a suffix (`bytes=-500`, the last 500 bytes) was ignored.
public enum ByteRange: Equatable, Sendable {
    /// No range to honour — none asked, one invalid (ignored, as the RFC requires), or several (which a server may
    /// ignore; multipart answers are not made): the whole representation, 200.
    case whole
    /// These bytes (first and last inclusive), 206.
    case part(first: Int64, last: Int64)
    /// A valid range that lies past the end, or an empty suffix: 416, with `Content-Range: bytes */size`.
    case unsatisfiable

    /// Decides `header` (the `Range` field's value, if any) against `size` bytes.
    public static func resolve(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .whole }
        let trimmed = header.trimmingSpaces
        guard let eq = trimmed.firstIndex(of: "="), trimmed[..<eq].trimmingSpaces.lowercased() == "bytes" else {
            return .whole
        }
        let specs = trimmed[trimmed.index(after: eq)...].split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count == 1, let spec = specs.first else { return .whole }
        let s = spec.trimmingSpaces
        guard let dash = s.firstIndex(of: "-") else { return .whole }
        let firstText = s[..<dash]
        let lastText = s[s.index(after: dash)...]
        if firstText.isEmpty {
            // A suffix: the last N bytes (all of them when N is larger; none is unsatisfiable).
            guard let n = digits(lastText) else { return .whole }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .part(first: size - min(n, size), last: size - 1)
        }
        guard let first = digits(firstText) else { return .whole }
        var last = size - 1
        if !lastText.isEmpty {
            guard let l = digits(lastText), l >= first else { return .whole }
            last = min(l, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .part(first: first, last: last)
    }

    /// A decimal number of one or more digits; saturates at `Int64.max` (a position that large lies past any file).
    static func digits(_ text: Substring) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for c in text.utf8 {
            guard c >= 0x30, c <= 0x39 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.addingReportingOverflow(Int64(c - 0x30))
            value = o1 || o2 ? Int64.max : next
        }
        return value
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpaces: Substring {
        let s = self[...]
        let start = s.firstIndex { $0 != " " && $0 != "\t" } ?? s.endIndex
        let end = s.lastIndex { $0 != " " && $0 != "\t" }.map { s.index(after: $0) } ?? start
        return Substring(s[start..<Swift.max(start, end)])
    }
}
