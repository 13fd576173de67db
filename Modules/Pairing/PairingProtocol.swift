import Crypto
import Link

/// Pairing: an ephemeral X25519 exchange with a commitment, and a six-digit code both sides show, derived from the
/// exchange and the whole transcript — a person compares the two and confirms on both, and only then does each side
/// pin the other's long-term key. (Numeric comparison, as Bluetooth's: a relay in the middle ends up with two different
/// exchanges, so the two codes differ; the device commits to its ephemeral key before it sees the host's, so the relay
/// cannot grind for a match — it gets one guess in a million per attempt, and the host allows few attempts.)
///
/// ```
/// 1 device → host   PPCP·1, [commit = H(e_d ‖ n_d)] [device static key] [device id]
/// 2 host → device   [0] [e_h] [n_h] [host static key] [host name ⏎ HOST:PORT it serves on]   or [1] [why not]
/// 3 device → host   [e_d] [n_d]                                          the host checks the commitment
///   both            dh = X25519(e, e′); T = H(1 ‖ 2 ‖ 3); code = H_dh(T) mod 10⁶; kc = H_dh("confirm" ‖ T)
/// 4 device → host   [yes/no] [H_kc("device" ‖ yes/no)]
/// 5 host → device   [yes/no] [H_kc("host" ‖ yes/no)]                     pinned only if both said yes
/// ```
public enum PairingProtocol {
    public static let preamble: [UInt8] = Array("PPCP".utf8) + [1]
    /// How long one side waits for the other person's answer once the code is shown: a person reads two screens and
    /// answers (assumed; before 2026-12-03 it was the link's 10 s, and two people 10 s apart failed as a dead peer).
    public static let defaultAnswerTimeoutNs: Int64 = 120_000_000_000

    /// What a finished pairing gave.
    public struct Result: Sendable {
        public let peerName: String
        public let peerKey: [UInt8]
        public let code: String
        /// Where the host said it serves devices (`HOST:PORT`), when it connected to an advertising device.
        public var peerAddress: String? = nil
    }

    /// The code and the confirmation key of an exchange.
    static func derive(dh: [UInt8], transcript: [[UInt8]]) -> (code: String, confirmKey: [UInt8]) {
        let t = Crypto.hash(transcript)
        let c = Crypto.hash([t], key: dh)
        let n = (UInt32(c[0]) << 24 | UInt32(c[1]) << 16 | UInt32(c[2]) << 8 | UInt32(c[3])) % 1_000_000
        let digits = String(format: "%06u", n)
        return ("\(digits.prefix(3)) \(digits.suffix(3))", Crypto.hash([Array("confirm".utf8), t], key: dh))
    }

    /// The other side's answer record, waited for up to `timeoutNs`; a side that says nothing by then, or goes, is
    /// `otherwise`'s error — what a person reads, not a dead peer.
    static func awaitAnswer(_ c: Connection, timeoutNs: Int64, else otherwise: String) throws -> [UInt8] {
        do { return try c.receiveHandshakeRecord(timeoutNs: timeoutNs) } catch {
            if error.code == .deadPeer || error.code == .closed { throw PairingError(otherwise) }
            throw error
        }
    }

    static func seconds(_ ns: Int64) -> String { String(format: "%.1f s", Double(ns) / 1e9) }

    static func answer(_ yes: Bool, role: String, key: [UInt8]) -> [UInt8] {
        [yes ? 1 : 0] + Crypto.hash([Array(role.utf8), [yes ? 1 : 0]], key: key)
    }

    /// Whether `message` is the peer's authentic yes (nil: not authentic at all).
    static func peerSaidYes(_ message: [UInt8], role: String, key: [UInt8]) -> Bool? {
        guard message.count == 33, message[0] <= 1 else { return nil }
        guard Crypto.equal(message, answer(message[0] == 1, role: role, key: key)) else { return nil }
        return message[0] == 1
    }

    /// Device side, on a connection to the host's pairing window. `confirm` shows the code (and the host's name and
    /// fingerprint) to the person and returns their answer.
    ///
    /// The host's person may answer long after this side's (they are two people at two screens): the host's answer is
    /// waited for up to `answerTimeoutNs`, and a host that says nothing by then is said to be one whose person did not
    /// answer in time (before, a 10 s wait ended it as a dead peer).
    public static func pairAsDevice(
        _ c: Connection, identity: Identity, deviceID: String, answerTimeoutNs: Int64 = defaultAnswerTimeoutNs,
        confirm: (_ code: String, _ hostName: String, _ fingerprint: String) -> Bool
    ) throws(PairingError) -> Result {
        do {
            let e = KeyPair.generate()
            let nonce = Crypto.random(32)
            let m1 = Crypto.hash([e.publicKey, nonce]) + identity.keys.publicKey + Array(deviceID.utf8)
            try c.sendHandshakeRecord(m1, prefix: preamble)
            let m2 = try c.receiveHandshakeRecord()
            guard let status = m2.first else { throw PairingError("the host sent an empty answer") }
            if status != 0 {
                throw PairingError("the host refused: \(String(decoding: m2.dropFirst(), as: UTF8.self))")
            }
            guard m2.count >= 1 + 96 else { throw PairingError("the host's answer is too short to be one") }
            let hostE = Array(m2[1..<33])
            let hostKey = Array(m2[65..<97])
            let tail = String(decoding: m2[97...], as: UTF8.self).split(
                separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            let hostName = tail.first.map(String.init) ?? ""
            let serves = tail.count > 1 ? String(tail[1]) : nil
            let m3 = e.publicKey + nonce
            try c.sendHandshakeRecord(m3)
            guard let dh = e.agree(with: hostE) else { throw PairingError("the host's ephemeral key is not usable") }
            let (code, kc) = derive(dh: dh, transcript: [m1, m2, m3])
            let yes = confirm(code, hostName, KeyText.fingerprint(hostKey))
            try c.sendHandshakeRecord(answer(yes, role: "device", key: kc))
            let m5 = try awaitAnswer(
                c, timeoutNs: answerTimeoutNs,
                else: yes
                    ? "the host's person did not answer within \(seconds(answerTimeoutNs)) of this side's yes (or the host's window closed): nothing pinned"
                    : "not confirmed here: nothing pinned")
            guard let hostYes = peerSaidYes(m5, role: "host", key: kc) else {
                throw PairingError("the host's confirmation is not authentic (a relay between us?): nothing pinned")
            }
            guard yes else { throw PairingError("not confirmed here: nothing pinned") }
            guard hostYes else { throw PairingError("the host's person did not confirm the code: nothing pinned") }
            return Result(peerName: hostName, peerKey: hostKey, code: code, peerAddress: serves)
        } catch let e as PairingError {
            throw e
        } catch {
            throw PairingError("pairing with \(c.peer): \(error)")
        }
    }

    /// Host side, on a connection that opened with the pairing preamble's first bytes already read by `opened`.
    /// `admit` says why a device id cannot be paired (not a plain name, taken by another key), `confirm` shows the code.
    ///
    /// `confirm` may return nil when the code is not to be put to the person at all (the window is closing, or has
    /// had its attempts): the device is answered no. The device's person's answer is waited for up to
    /// `answerTimeoutNs` after this side's.
    public static func pairAsHost(
        _ c: Connection, identity: Identity, hostName: String, serves: String? = nil,
        answerTimeoutNs: Int64 = defaultAnswerTimeoutNs,
        admit: (_ deviceID: String, _ key: [UInt8]) -> String?,
        confirm: (_ code: String, _ deviceID: String, _ fingerprint: String) -> Bool
    ) throws(PairingError) -> Result {
        do {
            let m1 = try c.receiveHandshakeRecord()
            guard m1.count > 64 else {
                throw PairingError("a pairing request of \(m1.count) bytes is too short to be one")
            }
            let commit = Array(m1[0..<32])
            let deviceKey = Array(m1[32..<64])
            let deviceID = String(decoding: m1[64...], as: UTF8.self)
            if let why = admit(deviceID, deviceKey) {
                try c.sendHandshakeRecord([1] + Array(why.utf8))
                throw PairingError("refused \(deviceID): \(why)")
            }
            let e = KeyPair.generate()
            let nonce = Crypto.random(32)
            let m2 =
                [0] + e.publicKey + nonce + identity.keys.publicKey
                + Array((hostName + (serves.map { "\n" + $0 } ?? "")).utf8)
            try c.sendHandshakeRecord(m2)
            let m3 = try c.receiveHandshakeRecord()
            guard m3.count == 64, Crypto.equal(Crypto.hash([Array(m3[0..<32]), Array(m3[32..<64])]), commit) else {
                throw PairingError("the device's key does not match what it committed to: nothing pinned")
            }
            guard let dh = e.agree(with: Array(m3[0..<32])) else {
                throw PairingError("the device's ephemeral key is not usable")
            }
            let (code, kc) = derive(dh: dh, transcript: [m1, m2, m3])
            let yes = confirm(code, deviceID, KeyText.fingerprint(deviceKey))
            let m4 = try awaitAnswer(
                c, timeoutNs: answerTimeoutNs,
                else:
                    "the device's person did not answer within \(seconds(answerTimeoutNs)) (or the device went): nothing pinned"
            )
            try c.sendHandshakeRecord(answer(yes, role: "host", key: kc))
            guard let deviceYes = peerSaidYes(m4, role: "device", key: kc) else {
                throw PairingError("the device's confirmation is not authentic (a relay between us?): nothing pinned")
            }
            guard yes else { throw PairingError("not confirmed here: nothing pinned") }
            guard deviceYes else { throw PairingError("the device's person did not confirm the code: nothing pinned") }
            return Result(peerName: deviceID, peerKey: deviceKey, code: code)
        } catch let e as PairingError {
            throw e
        } catch {
            throw PairingError("pairing with \(c.peer): \(error)")
        }
    }
}
