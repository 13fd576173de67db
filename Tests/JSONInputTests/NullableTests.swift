import Foundation
import JSONInput
import Testing

@Suite("Nullable: a documented field is written as null, not left out")
struct NullableTests {
    struct Row: Codable, Equatable {
        @Nullable var bay: String?
        var note: String?
    }

    @Test func nilIsNullAndAMissingKeyReadsAsNil() throws {
        let text = String(decoding: try JSONEncoder().encode(Row(bay: nil, note: nil)), as: UTF8.self)
        #expect(text == #"{"bay":null}"#)
        #expect(try JSONInput.decode(Row.self, from: Data("{}".utf8)) == Row(bay: nil, note: nil))
        #expect(try JSONInput.decode(Row.self, from: Data(#"{"bay":"b"}"#.utf8)) == Row(bay: "b", note: nil))
        #expect(throws: (any Error).self) { try JSONInput.decode(Row.self, from: Data(#"{"bay":1}"#.utf8)) }
    }
}
