import CSodium

/// The primitives ppc's pairing and encrypted link are built from, all libsodium's (the only importer of CSodium):
/// X25519, BLAKE2b, XChaCha20-Poly1305 (one-shot AEAD for the handshake, secretstream for the link's records), the
/// system's random source and constant-time comparison. Nothing here invents a primitive; the patterns built from them
/// are in docs/protocol.md.
public enum Crypto {
    /// Once per process (libsodium's own init is idempotent and thread-safe).
    public static let ready: Bool = sodium_init() >= 0

    public static let keyBytes = 32

    /// `count` bytes from the system's random source.
    public static func random(_ count: Int) -> [UInt8] {
        precondition(ready)
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return out
    }

    /// A uniform number below `bound`.
    public static func random(below bound: UInt32) -> UInt32 { randombytes_uniform(bound) }

    /// Whether `a` and `b` are equal, in time that depends only on their length.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return a.isEmpty && b.isEmpty }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in sodium_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 }
        }
    }

    /// BLAKE2b of the concatenation of `parts`, `length` bytes (16…64), keyed when `key` is given (16…64 bytes).
    public static func hash(_ parts: [[UInt8]], key: [UInt8]? = nil, length: Int = 32) -> [UInt8] {
        precondition(ready)
        // The state is 64-byte aligned in C, which Swift sees as opaque: allocated here with that alignment.
        let raw = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer { raw.deallocate() }
        let state = OpaquePointer(raw)
        if let key {
            _ = key.withUnsafeBufferPointer { crypto_generichash_init(state, $0.baseAddress, key.count, length) }
        } else {
            _ = crypto_generichash_init(state, nil, 0, length)
        }
        for p in parts {
            _ = p.withUnsafeBufferPointer { crypto_generichash_update(state, $0.baseAddress, UInt64(p.count)) }
        }
        var out = [UInt8](repeating: 0, count: length)
        _ = out.withUnsafeMutableBufferPointer { crypto_generichash_final(state, $0.baseAddress!, length) }
        return out
    }
}

/// An X25519 key pair. The secret half never leaves the process except into its owner's 0600 file.
public struct KeyPair: Sendable {
    public let publicKey: [UInt8]
    public let secretKey: [UInt8]

    /// A fresh pair from the system's random source.
    public static func generate() -> KeyPair {
        precondition(Crypto.ready)
        var pk = [UInt8](repeating: 0, count: 32)
        var sk = [UInt8](repeating: 0, count: 32)
        _ = pk.withUnsafeMutableBufferPointer { p in
            sk.withUnsafeMutableBufferPointer { s in crypto_box_keypair(p.baseAddress!, s.baseAddress!) }
        }
        return KeyPair(publicKey: pk, secretKey: sk)
    }

    /// The pair whose secret half is `secretKey` (32 bytes); nil for a wrong length.
    public init?(secretKey: [UInt8]) {
        guard Crypto.ready, secretKey.count == 32 else { return nil }
        var pk = [UInt8](repeating: 0, count: 32)
        _ = pk.withUnsafeMutableBufferPointer { p in
            secretKey.withUnsafeBufferPointer { crypto_scalarmult_base(p.baseAddress!, $0.baseAddress!) }
        }
        self.publicKey = pk
        self.secretKey = secretKey
    }

    init(publicKey: [UInt8], secretKey: [UInt8]) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// X25519 of this secret with `peer`'s public key; nil when the peer's key is of the wrong length or a low-order
    /// point (the shared secret would be all zeros: a forged key).
    public func agree(with peer: [UInt8]) -> [UInt8]? {
        guard peer.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        let r = out.withUnsafeMutableBufferPointer { o in
            secretKey.withUnsafeBufferPointer { s in
                peer.withUnsafeBufferPointer { p in crypto_scalarmult(o.baseAddress!, s.baseAddress!, p.baseAddress!) }
            }
        }
        return r == 0 ? out : nil
    }
}

/// One-shot XChaCha20-Poly1305 (IETF): the handshake's sealed fields.
public enum AEAD {
    public static let tagBytes = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
    public static let nonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())

    public static func seal(_ plain: [UInt8], key: [UInt8], nonce: [UInt8], ad: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == nonceBytes)
        var out = [UInt8](repeating: 0, count: plain.count + tagBytes)
        var written: UInt64 = 0
        _ = out.withUnsafeMutableBufferPointer { o in
            plain.withUnsafeBufferPointer { p in
                ad.withUnsafeBufferPointer { a in
                    nonce.withUnsafeBufferPointer { n in
                        key.withUnsafeBufferPointer { k in
                            crypto_aead_xchacha20poly1305_ietf_encrypt(
                                o.baseAddress!, &written, p.baseAddress, UInt64(plain.count), a.baseAddress,
                                UInt64(ad.count), nil,
                                n.baseAddress!, k.baseAddress!)
                        }
                    }
                }
            }
        }
        return out
    }

    /// The plaintext, or nil when `sealed` was not made with this key, nonce and associated data.
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard sealed.count >= tagBytes, key.count == 32, nonce.count == nonceBytes else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - tagBytes)
        var written: UInt64 = 0
        let r = out.withUnsafeMutableBufferPointer { o in
            sealed.withUnsafeBufferPointer { c in
                ad.withUnsafeBufferPointer { a in
                    nonce.withUnsafeBufferPointer { n in
                        key.withUnsafeBufferPointer { k in
                            crypto_aead_xchacha20poly1305_ietf_decrypt(
                                o.baseAddress, &written, nil, c.baseAddress!, UInt64(sealed.count), a.baseAddress,
                                UInt64(ad.count),
                                n.baseAddress!, k.baseAddress!)
                        }
                    }
                }
            }
        }
        return r == 0 ? out : nil
    }
}

/// One direction of an encrypted stream (libsodium's secretstream, XChaCha20-Poly1305): every message authenticated,
/// its position in the stream part of its key material, so a message altered, replayed, reordered or dropped fails
/// to open — and every message after it does too.
public final class SecretStream: @unchecked Sendable {
    // @unchecked: one thread pushes (or pulls) on a stream; the state is never shared across directions.
    public static let headerBytes = Int(crypto_secretstream_xchacha20poly1305_headerbytes())
    public static let overhead = Int(crypto_secretstream_xchacha20poly1305_abytes())

    var state = crypto_secretstream_xchacha20poly1305_state()
    /// Messages sealed or opened so far.
    public private(set) var count: UInt64 = 0

    private init() {}

    /// The sending side for `key` (32 bytes), and the header the receiver needs to start.
    public static func sender(key: [UInt8]) -> (SecretStream, header: [UInt8]) {
        precondition(Crypto.ready && key.count == 32)
        let s = SecretStream()
        var header = [UInt8](repeating: 0, count: headerBytes)
        _ = header.withUnsafeMutableBufferPointer { h in
            key.withUnsafeBufferPointer {
                crypto_secretstream_xchacha20poly1305_init_push(&s.state, h.baseAddress!, $0.baseAddress!)
            }
        }
        return (s, header)
    }

    /// The receiving side for `key` and the sender's `header`; nil for a malformed header.
    public static func receiver(key: [UInt8], header: [UInt8]) -> SecretStream? {
        guard Crypto.ready, key.count == 32, header.count == headerBytes else { return nil }
        let s = SecretStream()
        let r = header.withUnsafeBufferPointer { h in
            key.withUnsafeBufferPointer {
                crypto_secretstream_xchacha20poly1305_init_pull(&s.state, h.baseAddress!, $0.baseAddress!)
            }
        }
        return r == 0 ? s : nil
    }

    /// Seals `plain` into `out` (at least `plain.count + overhead` bytes); returns the bytes written.
    public func seal(_ plain: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(out.count >= plain.count + Self.overhead)
        var written: UInt64 = 0
        _ = crypto_secretstream_xchacha20poly1305_push(
            &state, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
            plain.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plain.count), nil, 0,
            UInt8(crypto_secretstream_xchacha20poly1305_TAG_MESSAGE))
        count += 1
        return Int(written)
    }

    /// Opens `sealed` into `out` (at least `sealed.count − overhead` bytes); the plaintext's length, or nil when the
    /// message is not the next one this stream's sender sealed, unaltered.
    public func open(_ sealed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard sealed.count >= Self.overhead, out.count >= sealed.count - Self.overhead else { return nil }
        var written: UInt64 = 0
        var tag: UInt8 = 0
        let r = crypto_secretstream_xchacha20poly1305_pull(
            &state, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, &tag,
            sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count), nil, 0)
        guard r == 0 else { return nil }
        count += 1
        return Int(written)
    }
}
