import Crypto
import Foundation
import Syscall

/// The handshake every encrypted connection opens with: a Noise-IK-like pattern built from libsodium's X25519, BLAKE2b
/// and XChaCha20-Poly1305 (docs/protocol.md writes it down and says why).
///
/// ```
/// premessage  <- s                     the device knows the host's static key (pinned at pairing)
/// message 1   -> e, es, s, ss, payload the device's static key travels encrypted; only a holder of the host's
///                                      secret can read it, and the `ss` term proves the device holds its own
/// message 2   <- e, ee, se, payload    the host answers on fresh ephemerals: a replayed message 1 gets an answer
///                                      nobody but the real device can read
/// split       two keys, one per direction → secretstream
/// ```
///
/// The responder learns the initiator's static key from message 1 and decides (is it pinned?) before it says anything
/// but a sealed refusal. Pure functions over byte arrays: the fuzzers feed them.
public enum LinkHandshake {
    public static let name = Array("ppc-link-1 IK X25519 XChaChaPoly BLAKE2b".utf8)
    /// The bytes a secure connection starts with, so a host tells it from a plaintext one at the first read.
    public static let preamble: [UInt8] = Array("PPCS".utf8) + [1]
    /// The largest handshake message (two keys, two sealed fields, a short payload).
    public static let maxMessageBytes = 4096

    /// The symmetric state of a handshake in progress.
    struct State {
        var ck: [UInt8]
        var h: [UInt8]
        var k: [UInt8]?
        var n: UInt64 = 0

        init() {
            h = Crypto.hash([LinkHandshake.name])
            ck = h
        }

        mutating func mixHash(_ x: [UInt8]) { h = Crypto.hash([h, x]) }

        /// HKDF with keyed BLAKE2b: two outputs from the chaining key and `ikm`.
        static func hkdf(_ ck: [UInt8], _ ikm: [UInt8]) -> ([UInt8], [UInt8]) {
            let prk = Crypto.hash([ikm], key: ck)
            let o1 = Crypto.hash([[1]], key: prk)
            let o2 = Crypto.hash([o1, [2]], key: prk)
            return (o1, o2)
        }

        mutating func mixKey(_ dh: [UInt8]) {
            (ck, k) = Self.hkdf(ck, dh)
            n = 0
        }

        func nonce() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: AEAD.nonceBytes)
            withUnsafeBytes(of: n.littleEndian) { for i in 0..<8 { out[i] = $0[i] } }
            return out
        }

        mutating func encryptAndHash(_ p: [UInt8]) -> [UInt8] {
            let c = AEAD.seal(p, key: k!, nonce: nonce(), ad: h)
            n += 1
            mixHash(c)
            return c
        }

        mutating func decryptAndHash(_ c: [UInt8]) -> [UInt8]? {
            guard let k, let p = AEAD.open(c, key: k, nonce: nonce(), ad: h) else { return nil }
            n += 1
            mixHash(c)
            return p
        }

        /// The transport keys: initiator → responder, responder → initiator.
        func split() -> (toResponder: [UInt8], toInitiator: [UInt8]) { Self.hkdf(ck, []) }
    }

    /// The initiator (a device) between its two messages.
    public struct Initiator {
        var state: State
        let e: KeyPair
        let s: KeyPair
        let rs: [UInt8]
    }

    /// The transport keys a finished handshake gives one side.
    public struct Keys: Sendable {
        public let send: [UInt8]
        public let receive: [UInt8]
    }

    /// Message 1 for a responder whose static key is `responder`, from `identity`, carrying `payload`.
    public static func initiate(identity: KeyPair, responder: [UInt8], payload: [UInt8]) throws(LinkError) -> (
        Initiator, message: [UInt8]
    ) {
        var st = State()
        st.mixHash(responder)
        let e = KeyPair.generate()
        st.mixHash(e.publicKey)
        guard let es = e.agree(with: responder) else {
            throw LinkError(.unauthenticated, "the pinned host key is not a usable X25519 key")
        }
        st.mixKey(es)
        let sealedStatic = st.encryptAndHash(identity.publicKey)
        guard let ss = identity.agree(with: responder) else {
            throw LinkError(.unauthenticated, "the pinned host key is not a usable X25519 key")
        }
        st.mixKey(ss)
        let sealedPayload = st.encryptAndHash(payload)
        return (Initiator(state: st, e: e, s: identity, rs: responder), e.publicKey + sealedStatic + sealedPayload)
    }

    /// Reads message 2; the responder's payload and the keys, or why it is not the pinned responder's answer.
    public static func finish(_ i: Initiator, message: [UInt8]) throws(LinkError) -> (payload: [UInt8], keys: Keys) {
        guard message.count >= 32 + AEAD.tagBytes else {
            throw LinkError(.unauthenticated, "handshake reply of \(message.count) bytes is too short")
        }
        var st = i.state
        let re = Array(message[0..<32])
        st.mixHash(re)
        guard let ee = i.e.agree(with: re), let se = i.s.agree(with: re) else {
            throw LinkError(.unauthenticated, "the host's ephemeral key is not usable")
        }
        st.mixKey(ee)
        st.mixKey(se)
        guard let payload = st.decryptAndHash(Array(message[32...])) else {
            throw LinkError(
                .unauthenticated,
                "the reply was not made by the holder of the pinned host key (a swapped or impostor host)")
        }
        let (a, b) = st.split()
        return (payload, Keys(send: a, receive: b))
    }

    /// The responder (a host) between reading message 1 and answering it.
    public struct Responder {
        var state: State
        let e: KeyPair
        let initiatorEphemeral: [UInt8]
        /// The initiator's static public key (decide whether it is pinned before answering).
        public let peer: [UInt8]
        public let payload: [UInt8]
    }

    /// Reads message 1 with the responder's `identity`.
    public static func respond(identity: KeyPair, message: [UInt8]) throws(LinkError) -> Responder {
        let sealedStatic = 32 + AEAD.tagBytes
        guard message.count >= 32 + sealedStatic + AEAD.tagBytes, message.count <= maxMessageBytes else {
            throw LinkError(.unauthenticated, "handshake message of \(message.count) bytes is not one")
        }
        var st = State()
        st.mixHash(identity.publicKey)
        let ie = Array(message[0..<32])
        st.mixHash(ie)
        guard let es = identity.agree(with: ie) else {
            throw LinkError(.unauthenticated, "the device's ephemeral key is not usable")
        }
        st.mixKey(es)
        guard let peer = st.decryptAndHash(Array(message[32..<(32 + sealedStatic)])) else {
            throw LinkError(
                .unauthenticated,
                "message 1 was not made for this host's key (the device pinned another host, or it was altered)")
        }
        guard let ss = identity.agree(with: peer) else {
            throw LinkError(.unauthenticated, "the device's static key is not usable")
        }
        st.mixKey(ss)
        guard let payload = st.decryptAndHash(Array(message[(32 + sealedStatic)...])) else {
            throw LinkError(.unauthenticated, "message 1's sender does not hold the key it claims")
        }
        return Responder(state: st, e: KeyPair.generate(), initiatorEphemeral: ie, peer: peer, payload: payload)
    }

    /// Message 2 carrying `payload`, and the responder's keys.
    public static func reply(_ r: Responder, payload: [UInt8]) throws(LinkError) -> (message: [UInt8], keys: Keys) {
        var st = r.state
        st.mixHash(r.e.publicKey)
        guard let ee = r.e.agree(with: r.initiatorEphemeral), let se = r.e.agree(with: r.peer) else {
            throw LinkError(.unauthenticated, "the device's keys are not usable")
        }
        st.mixKey(ee)
        st.mixKey(se)
        let sealed = st.encryptAndHash(payload)
        let (a, b) = st.split()
        return (r.e.publicKey + sealed, Keys(send: b, receive: a))
    }
}

/// An encrypted connection's two streams and its buffers, made once at the handshake: sealing and opening a record
/// allocates nothing.
///
/// On the wire every record is `u32 length (little-endian) · sealed bytes`; a record holds exactly one link message
/// (a chunk's prefix and data included), so the plaintext parsers above it are unchanged.
final class SecureSession {
    let sender: SecretStream
    let receiver: SecretStream
    /// The largest plaintext a record may carry: the largest message (a chunk, a preview frame) with room to spare.
    static let maxPlain = max(LinkMessage.maxChunkBytes, LinkMessage.maxPreviewPixels) + 64 * 1024
    static var maxSealed: Int { maxPlain + SecretStream.overhead }
    /// Plaintext being assembled for sending (a chunk's prefix, then its data read from its file).
    let scratch: UnsafeMutableRawBufferPointer
    /// A sealed record, going out or coming in.
    let sealed: UnsafeMutableRawBufferPointer
    /// The last record opened, and how much of it is still unread.
    let plain: UnsafeMutableRawBufferPointer
    var plainStart = 0
    var plainEnd = 0
    /// The peer's static public key (the host learns the device's from the handshake).
    let peer: [UInt8]

    init(sender: SecretStream, receiver: SecretStream, peer: [UInt8]) {
        self.sender = sender
        self.receiver = receiver
        self.peer = peer
        scratch = .allocate(byteCount: Self.maxPlain + 8, alignment: 16)
        sealed = .allocate(byteCount: Self.maxSealed + 8, alignment: 16)
        plain = .allocate(byteCount: Self.maxPlain + 8, alignment: 16)
    }

    deinit {
        scratch.deallocate()
        sealed.deallocate()
        plain.deallocate()
    }

    var unread: Int { plainEnd - plainStart }
}

/// A device's means to open an encrypted link: its identity and the host key it pinned at pairing.
public struct DeviceSecurity: Sendable {
    public let identity: KeyPair
    public let hostKey: [UInt8]
    public init(identity: KeyPair, hostKey: [UInt8]) {
        self.identity = identity
        self.hostKey = hostKey
    }
}

/// A host's means to accept encrypted links: its identity, and which device (if any) a public key was paired as.
public struct HostSecurity: Sendable {
    public let identity: KeyPair
    /// The device id pinned with this key at pairing, or nil when the key is not paired here.
    public let deviceFor: @Sendable ([UInt8]) -> String?
    /// Plaintext connections accepted too (only ever on a loopback listener, for benches and tests).
    public let allowPlaintext: Bool

    /// The policy name a refusal for want of pairing carries, so the device reports the host's words as they are.
    public static let pairingPolicy = "pairing"

    public init(identity: KeyPair, deviceFor: @escaping @Sendable ([UInt8]) -> String?, allowPlaintext: Bool = false) {
        self.identity = identity
        self.deviceFor = deviceFor
        self.allowPlaintext = allowPlaintext
    }
}

extension Connection {
    /// Handshake time limits: the answer must come within this, and each message whole within the message deadline.
    public static let handshakeTimeoutNs: Int64 = 10_000_000_000

    /// Writes one raw (unsealed) handshake record (pairing uses these too).
    public func sendHandshakeRecord(_ bytes: [UInt8], prefix: [UInt8] = []) throws(LinkError) {
        var out = prefix
        withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { out += $0 }
        out += bytes
        if let e = out.withUnsafeBytes({ sendAll($0) }) { throw LinkError(.io, "handshake with \(peer): \(reason(e))") }
    }

    /// Reads one raw handshake record (at most `LinkHandshake.maxMessageBytes`).
    public func receiveHandshakeRecord(timeoutNs: Int64 = handshakeTimeoutNs) throws(LinkError) -> [UInt8] {
        try awaitFirstByte(timeoutNs: timeoutNs)
        let deadline = monotonicNowNs() + Self.messageDeadlineNs
        let head = try readExactly(4, deadlineNs: deadline)
        var length: UInt32 = 0
        for i in 0..<4 { length |= UInt32(head[i]) << UInt32(8 * i) }
        let n = Int(length)
        guard n <= LinkHandshake.maxMessageBytes else {
            throw LinkError(.unauthenticated, "\(peer): a handshake message of \(n) bytes is not one")
        }
        return try readExactly(n, deadlineNs: deadline)
    }

    /// Device side: authenticates the host by the key pinned at pairing and itself by its identity, then seals every
    /// message after. Throws `.unauthenticated` when the host is not the pinned one, `.refused` with the host's words
    /// when the host does not know this device ("not paired with this host").
    public func secure(as device: DeviceSecurity, channel: LinkMessage.Channel, timeoutNs: Int64 = handshakeTimeoutNs)
        throws(LinkError)
    {
        let code: UInt8 =
            switch channel {
            case .control: 0
            case .bulk: 1
            case .preview: 2
            }
        let (initiator, m1) = try LinkHandshake.initiate(
            identity: device.identity, responder: device.hostKey, payload: [code])
        try sendHandshakeRecord(m1, prefix: LinkHandshake.preamble)
        let m2: [UInt8]
        do { m2 = try receiveHandshakeRecord(timeoutNs: timeoutNs) } catch  where error.code == .closed {
            throw LinkError(
                .unauthenticated,
                "\(peer) closed the connection during the handshake (a host that does not speak the encrypted link, or one that refused it)"
            )
        }
        let (answer, keys) = try LinkHandshake.finish(initiator, message: m2)
        guard let status = answer.first else { throw LinkError(.unauthenticated, "\(peer): an empty handshake answer") }
        if status != 0 {
            throw LinkError(.refused, String(decoding: answer.dropFirst(), as: UTF8.self))
        }
        try startStreams(keys, peer: device.hostKey)
    }

    /// What a host's first read found.
    public enum Opening: Sendable {
        /// An encrypted link from the device paired as `device`.
        case secure(device: String)
        /// A plaintext link (its first bytes are kept for the first message).
        case plaintext
    }

    /// Host side: reads the connection's first bytes. An encrypted link's handshake is answered — a device whose key is
    /// not paired here gets a sealed "not paired with this host" and nothing else, and the call throws — and every
    /// message after is sealed. A plaintext connection is left as it was (the caller decides whether to take it).
    public func accept(as host: HostSecurity) throws(LinkError) -> Opening {
        try awaitFirstByte(timeoutNs: Self.handshakeTimeoutNs)
        // One byte decides: a plaintext message starts with the protocol version, never with the preamble's 'P' — so a
        // plaintext peer's first byte is handed back untouched, and its message's deadline applies as before.
        let deadline = monotonicNowNs() + Self.messageDeadlineNs
        let head = try readExactly(1, deadlineNs: deadline)
        guard head[0] == LinkHandshake.preamble[0] else {
            pushback = head + pushback
            return .plaintext
        }
        let rest = try readExactly(LinkHandshake.preamble.count - 1, deadlineNs: deadline)
        guard head + rest == LinkHandshake.preamble else {
            throw LinkError(.unauthenticated, "\(peer): neither a link message nor the encrypted link's preamble")
        }
        let m1 = try receiveHandshakeRecord()
        let responder = try LinkHandshake.respond(identity: host.identity, message: m1)
        guard let device = host.deviceFor(responder.peer) else {
            let (m2, _) = try LinkHandshake.reply(responder, payload: [1] + Array("not paired with this host".utf8))
            try sendHandshakeRecord(m2)
            throw LinkError(
                .unauthenticated,
                "\(peer): a device key not paired with this host (\(KeyText.fingerprint(responder.peer)))")
        }
        let (m2, keys) = try LinkHandshake.reply(responder, payload: [0])
        try sendHandshakeRecord(m2)
        try startStreams(keys, peer: responder.peer)
        return .secure(device: device)
    }

    /// Exchanges secretstream headers (each side's first record, sent in the clear: a header is not secret) and
    /// switches the connection to sealed records.
    func startStreams(_ keys: LinkHandshake.Keys, peer key: [UInt8]) throws(LinkError) {
        let (sender, header) = SecretStream.sender(key: keys.send)
        try sendHandshakeRecord(header)
        let theirs = try receiveHandshakeRecord()
        guard let receiver = SecretStream.receiver(key: keys.receive, header: theirs) else {
            throw LinkError(.unauthenticated, "\(peer): a stream header of \(theirs.count) bytes is not one")
        }
        session = SecureSession(sender: sender, receiver: receiver, peer: key)
    }
}

/// Keys as people and files see them.
public enum KeyText {
    /// Lower-case hex.
    public static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Bytes from hex; nil unless it is exactly hex of `length` bytes.
    public static func bytes(hex: String, length: Int = 32) -> [UInt8]? {
        let chars = Array(hex.utf8)
        guard chars.count == length * 2 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(length)
        func v(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var i = 0
        while i < chars.count {
            guard let hi = v(chars[i]), let lo = v(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// A short fingerprint a person can compare: the first 8 bytes of BLAKE2b of the key, hex in groups of four.
    public static func fingerprint(_ key: [UInt8]) -> String {
        let h = hex(Array(Crypto.hash([key], length: 16).prefix(8)))
        return stride(from: 0, to: h.count, by: 4).map { i in String(h.dropFirst(i).prefix(4)) }.joined(separator: ":")
    }
}

extension Connection {
    /// Reads the first `count` bytes of a connection (its preamble), within the handshake's time limits.
    public func readPreamble(_ count: Int) throws(LinkError) -> [UInt8] {
        try awaitFirstByte(timeoutNs: Self.handshakeTimeoutNs)
        return try readExactly(count, deadlineNs: monotonicNowNs() + Self.messageDeadlineNs)
    }
}
