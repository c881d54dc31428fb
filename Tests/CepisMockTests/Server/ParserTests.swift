import BrazilianDocuments
import Foundation
import Testing

@testable import CepisMock

extension MockTests {
  @Suite struct ParserTests {
    func parse(_ text: String, limits: MockHTTPRequest.Limits = .init())
      -> MockHTTPRequest.ParseResult
    {
      MockHTTPRequest.parse(Array(text.utf8), limits: limits)
    }

    @Test func simpleGet() throws {
      let text = "GET /csv?ceps=01001000,20040020 HTTP/1.1\r\nHost: x\r\nX-Api-Key: k\r\n\r\n"
      guard case .complete(let request, let consumed) = parse(text) else {
        Issue.record("not complete")
        return
      }
      #expect(consumed == text.utf8.count)
      #expect(request.method == "GET")
      #expect(request.path == "/csv")
      #expect(request.query == "ceps=01001000,20040020")
      #expect(request.headers["x-api-key"] == "k")
      #expect(request.keepAlive)
    }

    @Test func aTLSClientHelloIsRefusedAtOnce() {
      // The first bytes of a TLS 1.2/1.3 ClientHello record, far short of any head.
      let hello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]
      #expect(MockHTTPRequest.parse(hello) == .invalid(status: 400, reason: "not an HTTP request"))
      #expect(parse("GET /") == .incomplete)
    }

    @Test func incrementalAndPipelined() {
      let text = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n"
      let bytes = Array(text.utf8)
      for cut in 0..<28 {
        #expect(MockHTTPRequest.parse(bytes[0..<cut]) == .incomplete)
      }
      guard case .complete(let request, let consumed) = MockHTTPRequest.parse(bytes) else {
        Issue.record("not complete")
        return
      }
      #expect(request.path == "/a")
      #expect(MockHTTPRequest.parse(bytes[consumed...]) == .incomplete)
    }

    @Test func bodyAndConnection() {
      let text = "POST /__mock/reset HTTP/1.0\r\nContent-Length: 4\r\n\r\nabcdGET"
      guard case .complete(let request, let consumed) = parse(text) else {
        Issue.record("not complete")
        return
      }
      #expect(request.body == Array("abcd".utf8))
      #expect(consumed == text.utf8.count - 3)
      #expect(!request.keepAlive)
      guard case .complete(let closing, _) = parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
      else {
        Issue.record("not complete")
        return
      }
      #expect(!closing.keepAlive)
      #expect(parse("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc") == .incomplete)
    }

    @Test func lenientForms() {
      guard case .complete(let request, _) = parse("\r\nGET http://h:1/x?y=1 HTTP/1.1\n\n") else {
        Issue.record("not complete")
        return
      }
      #expect(request.path == "/x")
      #expect(request.query == "y=1")
    }

    @Test(arguments: [
      ("GARBAGE\r\n\r\n", 400),
      ("GET /\r\n\r\n", 400),
      ("GET / HTTP/1.1 extra\r\n\r\n", 400),
      ("G@T / HTTP/1.1\r\n\r\n", 400),
      ("GET / HTTP/2.0\r\n\r\n", 505),
      ("GET / FTP/1.1\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\n: empty\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nBad Name: b\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413),
      ("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
      ("GET /\u{1} HTTP/1.1\r\n\r\n", 400),
      ("GET / HTTP/1.1\r\nA: b\u{1}c\r\n\r\n", 400),
      ("GET relative HTTP/1.1\r\n\r\n", 400),
    ])
    func invalid(text: String, status: Int) {
      guard case .invalid(let actual, _) = parse(text) else {
        Issue.record("accepted \(text.debugDescription)")
        return
      }
      #expect(actual == status)
    }

    @Test func headTooLarge() {
      let limits = MockHTTPRequest.Limits(maxHeaderBytes: 1_024)
      let big = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 2_000)
      guard case .invalid(let status, _) = parse(big, limits: limits) else {
        Issue.record("accepted")
        return
      }
      #expect(status == 431)
    }

    @Test func neverTrapsOnRandomBytes() {
      var generator = SplitMix64(state: 42)
      let alphabet = Array("GET /HTTP1.:\r\n -\u{0}é".utf8)
      for _ in 0..<3_000 {
        let length = Int(generator.next() % 200)
        let bytes = (0..<length).map { _ in
          generator.next() % 3 == 0
            ? UInt8(truncatingIfNeeded: generator.next())
            : alphabet[Int(generator.next() % UInt64(alphabet.count))]
        }
        _ = MockHTTPRequest.parse(bytes)
      }
    }

    @Test func queryItemsDecode() {
      let record = MockRequestRecord(
        method: "GET", path: "/csv", query: "ceps=01001000%2C20040020&x=a%20b&flag", headers: [:],
        arrival: Date(), route: .csv)
      #expect(record.queryItems == ["ceps": "01001000,20040020", "x": "a b", "flag": ""])
    }
  }
}
