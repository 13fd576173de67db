/// A name that may become one path component and cross the wire as is: device ids, session names, clip ids.
///
/// A plain name is 1 to `maxLength` characters of `A–Z a–z 0–9 . _ -`, starting with a letter or digit. Anything else
/// is refused with the reason, never rewritten: rewriting `bay/c` to `bay_c` would make two devices one folder.
public enum PlainName {
    /// The longest device id or session name.
    public static let maxLength = 64
    /// The longest clip id (session name, session id and shot number together).
    public static let maxClipIDLength = 160

    /// Why `name` is not a plain name (naming `what` it is), or nil when it is one.
    public static func problem(_ name: String, what: String, maxLength: Int = PlainName.maxLength) -> String? {
        let bytes = Array(name.utf8)
        if bytes.isEmpty { return "\(what) is empty" }
        if bytes.count > maxLength {
            return "\(what) '\(name.prefix(maxLength))…' is \(bytes.count) bytes; at most \(maxLength)"
        }
        func plain(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
                || b == 0x2D
        }
        func alnum(_ b: UInt8) -> Bool { plain(b) && b != 0x2E && b != 0x5F && b != 0x2D }
        if let bad = bytes.firstIndex(where: { !plain($0) }) {
            return
                "\(what) '\(name)' has '\(String(decoding: [bytes[bad]], as: UTF8.self))' at byte \(bad); only A-Z a-z 0-9 . _ - are allowed"
        }
        if !alnum(bytes[0]) { return "\(what) '\(name)' must start with a letter or digit" }
        return nil
    }

    /// True when `name` is a plain name.
    public static func isPlain(_ name: String, maxLength: Int = PlainName.maxLength) -> Bool {
        problem(name, what: "", maxLength: maxLength) == nil
    }
}
