import Foundation
import Testing

@testable import WebServer

/// What a `Range` header asks of a file, decided as RFC 9110 §14 says — the cases civetweb 1.15 answered wrongly first.
@Suite("ByteRange: a Range is answered as the RFC says, or the whole file is sent")
struct ByteRangeTests {
    @Test func aRangeWithinTheFileIsThatPart() {
        #expect(ByteRange.resolve("bytes=100-199", size: 1000) == .part(first: 100, last: 199))
        #expect(ByteRange.resolve("bytes=100-", size: 1000) == .part(first: 100, last: 999))
        #expect(ByteRange.resolve("bytes=0-0", size: 1000) == .part(first: 0, last: 0))
        #expect(ByteRange.resolve(" bytes = 5-9 ", size: 1000) == .part(first: 5, last: 9))
        #expect(ByteRange.resolve("Bytes=5-9", size: 1000) == .part(first: 5, last: 9))
    }

    @Test func aLastBytePastTheEndStopsAtTheEnd() {
        // civetweb 1.15 promised one byte more than it sent: the client waited for it, then failed.
        #expect(ByteRange.resolve("bytes=0-99999999999", size: 1000) == .part(first: 0, last: 999))
        #expect(ByteRange.resolve("bytes=900-1100", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange.resolve("bytes=0-99999999999999999999999999", size: 1000) == .part(first: 0, last: 999))
    }

    @Test func aSuffixIsTheLastBytes() {
        #expect(ByteRange.resolve("bytes=-100", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange.resolve("bytes=-5000", size: 1000) == .part(first: 0, last: 999))
        #expect(ByteRange.resolve("bytes=-0", size: 1000) == .unsatisfiable)
    }

    @Test func aRangePastTheEndIsUnsatisfiable() {
        #expect(ByteRange.resolve("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=999999999-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=18446744073709551615-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=0-", size: 0) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=-10", size: 0) == .unsatisfiable)
    }

    @Test func anInvalidRangeOrSeveralAreIgnored() {
        for header in [
            "bytes=5-2", "bytes=abc", "items=0-5", "bytes=", "bytes=-", "bytes=1-2-3", "bytes=+1-2", "bytes=0-1,5-9",
            "bytes=0-1,", "0-5", "bytes=٣-٥",
        ] {
            #expect(ByteRange.resolve(header, size: 1000) == .whole, "\(header)")
        }
        #expect(ByteRange.resolve(nil, size: 1000) == .whole)
    }

    /// Whatever the header, a part lies inside the file and is not empty.
    @Test func anyHeaderGivesAPartInsideTheFile() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("bytes=0123456789-, 9999999999999999999")
        for _ in 0..<20_000 {
            let header = String(
                (0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            let size = Int64.random(in: 0...5_000, using: &rng)
            if case .part(let first, let last) = ByteRange.resolve(header, size: size) {
                #expect(0 <= first && first <= last && last < size, "\(header) of \(size): \(first)-\(last)")
            }
        }
    }
}
