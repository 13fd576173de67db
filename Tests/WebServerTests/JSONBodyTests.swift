import Foundation
import Testing

@testable import WebServer

@Suite("JSONBody: the API's JSON, as JSONSerialization would write it, faster")
struct JSONBodyTests {
    /// Both texts parsed back: the same tree.
    func same(_ object: Any) throws -> Bool {
        let ours = try JSONSerialization.jsonObject(with: try JSONBody.data(object)) as? NSObject
        let theirs =
            try JSONSerialization.jsonObject(
                with: JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) as? NSObject
        return ours != nil && ours == theirs
    }

    @Test func everyKindOfValueTheStudioSendsComesOutAsJSONSerializationWritesIt() throws {
        let optional: Int64? = nil
        let tree: [String: Any] = [
            "string": "quote \" backslash \\ slash / newline \n tab \t control \u{01} accent é emoji 🏌️",
            "int": 42, "negative": -7, "int64": Int64.max, "int32": Int32(-5), "uint64": UInt64.max,
            "double": 0.1, "whole double": 2.0, "small": 1e-12, "large": 6.02e23,
            "true": true, "false": false, "null": NSNull(), "nil optional": optional as Any,
            "array": [1, "two", 3.5, false, NSNull()] as [Any], "empty array": [Any](), "empty object": [String: Any](),
            "nested": [
                "flags": ["kept", "starred"],
                "angles": [["clipId": "a", "t0HostNs": Int64(1_700_000_000_000_000_000)]],
            ] as [String: Any],
        ]
        #expect(try same(tree))
        let text = String(decoding: try JSONBody.data(tree), as: UTF8.self)
        #expect(text.contains("\"nil optional\":null"))
        #expect(text.contains("\"slash\\/") == false, "slashes are not escaped")
        // Keys sorted, as before: a response reads the same every time.
        #expect(text.hasPrefix("{\"array\":"))
    }

    @Test func numbersParsedFromJSONKeepTheirKind() throws {
        // What a handler passes on from a parsed body or a file: NSNumbers for true, 1, 1.5 and a large integer.
        let parsed = try JSONSerialization.jsonObject(
            with: Data(#"{"b":true,"i":1,"d":1.5,"big":9007199254740993,"z":0,"f":false}"#.utf8))
        let text = String(decoding: try JSONBody.data(parsed), as: UTF8.self)
        #expect(text == #"{"b":true,"big":9007199254740993,"d":1.5,"f":false,"i":1,"z":0}"#)
    }

    @Test func aValueWithNoJSONFormIsAnErrorNamingWhereItIs() {
        struct Opaque {}
        #expect { try JSONBody.data(["angles": [["clip": Opaque()]]]) } throws: {
            "\($0)".contains("$.angles[0].clip") && "\($0)".contains("Opaque")
        }
        // As a response: a 500 that says so, not a body that pretends.
        guard case .bytes(let status, _, let body, _) = WebServer.Response.json(["x": Opaque()]) else {
            Issue.record("not a body")
            return
        }
        #expect(status == 500)
        #expect(String(decoding: body, as: UTF8.self).contains("could not write its answer as JSON"))
    }
}
