import Discovery
import Testing

/// What a host reads of a device's advertisement. (Browsing and advertising through a real avahi-daemon, in a network
/// namespace of their own, are DiscoveryToolTests'.)
@Suite("Discovery: a TXT record read as RFC 6763 says")
struct DiscoveryTests {
    func record(_ strings: String...) -> [String: String] { Discovery.txtRecord(strings.map { Array($0.utf8) }) }

    @Test func keysAndValuesAsTheDeviceSentThem() {
        #expect(record("id=bay-1-face", "proto=1") == ["id": "bay-1-face", "proto": "1"])
        #expect(record("note=a=b") == ["note": "a=b"], "the first = divides")
    }

    @Test func aKeyIsCaseInsensitiveAndItsFirstOccurrenceCounts() {
        #expect(record("ID=first", "id=second") == ["id": "first"])
    }

    @Test func aKeyAloneIsPresentWithNoValueAndAnEmptyKeyIsIgnored() {
        #expect(record("paired", "=orphan", "") == ["paired": ""])
    }

    @Test func theServiceSaysItsDeviceIDFromTheRecord() {
        #expect(record("Id=dtl")["id"] == "dtl")
        #expect(Discovery.serviceType == "_ppc._tcp")
    }

    @Test func bytesThatAreNotUTF8AreReplacedNotTrusted() {
        let r = Discovery.txtRecord([Array("id=".utf8) + [0xFF, 0x41]])
        #expect(r["id"] == "\u{FFFD}A")
    }
}
