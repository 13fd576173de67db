import Crypto
import Testing

/// libsodium's X25519, BLAKE2b and XChaCha20-Poly1305 as the link uses them: agreement is symmetric, anything altered
/// is refused, a stream's messages open only in order.
@Suite("Crypto: agreement, hashing, sealed messages and streams")
struct CryptoTests {
    @Test func bothSidesAgreeOnOneSecretAndALowOrderKeyIsRefused() throws {
        #expect(Crypto.ready)
        let a = KeyPair.generate()
        let b = KeyPair.generate()
        let ab = try #require(a.agree(with: b.publicKey))
        #expect(ab == b.agree(with: a.publicKey) && ab.count == Crypto.keyBytes)
        #expect(a.agree(with: [UInt8](repeating: 0, count: 32)) == nil, "the all-zero point is of low order")
        #expect(a.agree(with: [1, 2, 3]) == nil)
        #expect(KeyPair(secretKey: a.secretKey)?.publicKey == a.publicKey)
    }

    @Test func blake2bIsTheReferenceValueAndKeyedDiffers() {
        // BLAKE2b-512 of "abc" (RFC 7693, appendix A).
        let abc = Crypto.hash([Array("abc".utf8)], length: 64)
        #expect(abc.prefix(8) == [0xBA, 0x80, 0xA5, 0x3F, 0x98, 0x1C, 0x4D, 0x0D])
        #expect(Crypto.hash([Array("ab".utf8), Array("c".utf8)], length: 64) == abc, "parts are one message")
        #expect(Crypto.hash([Array("abc".utf8)], key: Crypto.random(32)) != Crypto.hash([Array("abc".utf8)]))
    }

    @Test func aSealedMessageOpensOnlyAsItWasSealed() {
        let key = Crypto.random(32)
        let nonce = Crypto.random(AEAD.nonceBytes)
        let sealed = AEAD.seal(Array("clip.mp4".utf8), key: key, nonce: nonce, ad: [1])
        #expect(sealed.count == 8 + AEAD.tagBytes)
        #expect(AEAD.open(sealed, key: key, nonce: nonce, ad: [1]) == Array("clip.mp4".utf8))
        var flipped = sealed
        flipped[0] ^= 1
        #expect(AEAD.open(flipped, key: key, nonce: nonce, ad: [1]) == nil)
        #expect(AEAD.open(sealed, key: key, nonce: nonce, ad: [2]) == nil)
        #expect(AEAD.open(sealed, key: Crypto.random(32), nonce: nonce, ad: [1]) == nil)
    }

    @Test func aStreamOpensInOrderAndRefusesAReplayOrAReorder() throws {
        let key = Crypto.random(32)
        let (sender, header) = SecretStream.sender(key: key)
        let receiver = try #require(SecretStream.receiver(key: key, header: header))
        func seal(_ text: String) -> [UInt8] {
            let plain = Array(text.utf8)
            var out = [UInt8](repeating: 0, count: plain.count + SecretStream.overhead)
            let n = plain.withUnsafeBytes { p in out.withUnsafeMutableBytes { sender.seal(p, into: $0) } }
            return Array(out[..<n])
        }
        func open(_ sealed: [UInt8], with r: SecretStream) -> String? {
            var out = [UInt8](repeating: 0, count: sealed.count)
            guard let n = sealed.withUnsafeBytes({ p in out.withUnsafeMutableBytes { r.open(p, into: $0) } }) else {
                return nil
            }
            return String(decoding: out[..<n], as: UTF8.self)
        }
        let one = seal("one")
        let two = seal("two")
        #expect(open(one, with: receiver) == "one")
        #expect(open(one, with: receiver) == nil, "a replay")
        let other = try #require(SecretStream.receiver(key: key, header: header))
        #expect(open(two, with: other) == nil, "out of order")
        #expect(SecretStream.receiver(key: Crypto.random(32), header: header).map { open(one, with: $0) } ?? nil == nil)
    }
}
