import Foundation
import Testing

@testable import JSONInput

@Suite("JSONInput: nesting bounded before Foundation parses")
struct JSONInputTests {
    static func nested(_ depth: Int, open: String = "[", close: String = "]") -> Data {
        Data((String(repeating: open, count: depth) + "1" + String(repeating: close, count: depth)).utf8)
    }

    /// The reproduction from issue 33: `{"drawings":` and 300 `[` (312 bytes) overflowed a civetweb worker's stack.
    @Test func theRequestThatCrashedTheHostIsRefusedByByte() {
        let body = Data(("{\"drawings\":" + String(repeating: "[", count: 300)).utf8)
        #expect(throws: JSONInputError.self) { try JSONInput.object(body) }
        do {
            _ = try JSONInput.object(body)
        } catch {
            #expect(error.offset == 12 + 31)
            #expect(error.description.contains("deeper than 32"))
        }
    }

    @Test(arguments: [("[", "]"), ("{\"a\":", "}")])
    func theLimitIsExact(open: String, close: String) throws {
        #expect((try? JSONInput.value(Self.nested(32, open: open, close: close))) != nil)
        #expect(throws: JSONInputError.self) { try JSONInput.value(Self.nested(33, open: open, close: close)) }
    }

    /// Brackets inside strings, escaped quotes among them, are text, not nesting.
    @Test func bracketsInStringsDoNotCount() throws {
        let text =
            "{\"note\": \"" + String(repeating: "[{", count: 200) + "\\\"" + String(repeating: "[", count: 100) + "\"}"
        let o = try JSONInput.object(Data(text.utf8))
        #expect((o["note"] as? String)?.count == 401 + 100)
    }

    @Test func notJSONAndNotAnObjectAreSaid() {
        #expect(throws: JSONInputError.self) { try JSONInput.object(Data("[1]".utf8)) }
        #expect(throws: JSONInputError.self) { try JSONInput.object(Data("{\"a\":".utf8)) }
        #expect(throws: JSONInputError.self) { try JSONInput.decode([Int].self, from: Self.nested(33)) }
    }

    indirect enum Tree: Decodable {
        case leaf
        case number(Int)
        case node([Tree])
        init(from decoder: any Decoder) throws {
            if let n = try? decoder.singleValueContainer().decode(Int.self) {
                self = .number(n)
                return
            }
            var c = try decoder.unkeyedContainer()
            var children: [Tree] = []
            while !c.isAtEnd { children.append(try c.decode(Tree.self)) }
            self = children.isEmpty ? .leaf : .node(children)
        }
    }

    /// The deepest text taken parses, with both of Foundation's parsers, on a thread whose stack is smaller than a
    /// civetweb worker's: the bound keeps a parse within any thread ppc runs it on.
    @Test func theDeepestAllowedTextParsesOnASmallStack() {
        final class Outcome: @unchecked Sendable {
            // @unchecked: written by the thread before it signals, read after the wait.
            let done = NSCondition()
            var finished = false, parsed = false
        }
        let outcome = Outcome()
        let thread = Thread {
            let data = Self.nested(JSONInput.maxDepth)
            let parsed = (try? JSONInput.value(data)) != nil && (try? JSONInput.decode(Tree.self, from: data)) != nil
            outcome.done.lock()
            outcome.parsed = parsed
            outcome.finished = true
            outcome.done.signal()
            outcome.done.unlock()
        }
        thread.stackSize = 64 << 10
        thread.start()
        outcome.done.lock()
        while !outcome.finished { outcome.done.wait() }
        outcome.done.unlock()
        #expect(outcome.parsed)
    }
}
