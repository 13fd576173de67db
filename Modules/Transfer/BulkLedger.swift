/// What one bulk channel was offered and what of it verified whole, per clip — the rules a confirmation follows, as
/// pure code apart from the sockets and files `HostStore.serve` handles.
///
/// - An offer counts a file as offered and, until its bytes verify, not verified (an earlier verification of the same
///   name does not carry over: a file verified, offered again with other bytes and cut, must not be confirmed torn).
/// - A clip may be confirmed only when something was offered for it, no file is open, and every offered file verified.
/// - Confirming (or refusing) a clip's `clip_done` closes its account: what follows starts afresh.
struct BulkLedger: Sendable {
    private var offered: [String: Set<String>] = [:]
    private var verified: [String: Set<String>] = [:]

    /// `file` of `clip` was offered.
    mutating func offer(_ file: String, of clip: String) {
        offered[clip, default: []].insert(file)
        verified[clip]?.remove(file)
    }

    /// `file` of `clip` verified whole (its bytes hashed to the offer's XXH3 and made durable, or already stored so).
    mutating func verified(_ file: String, of clip: String) {
        verified[clip, default: []].insert(file)
    }

    /// Why `clip_done` for `clip` must confirm nothing, or nil when it may (the files to confirm are then ``files(of:)``).
    func refusal(toConfirm clip: String, fileOpen: Bool) -> String? {
        let sent = offered[clip] ?? []
        let good = verified[clip] ?? []
        if sent.isEmpty { return "clip_done for \(clip) with no file offered on this channel; nothing confirmed" }
        if fileOpen || sent != good {
            let missing = sent.subtracting(good).sorted().joined(separator: ", ")
            return
                "clip_done for \(clip) before every offered file was verified (not verified: \(missing)); nothing confirmed"
        }
        return nil
    }

    /// The files offered for `clip` (all verified, once ``refusal(toConfirm:fileOpen:)`` said nil).
    func files(of clip: String) -> Set<String> { offered[clip] ?? [] }

    /// Closes `clip`'s account.
    mutating func close(_ clip: String) {
        offered[clip] = nil
        verified[clip] = nil
    }
}
