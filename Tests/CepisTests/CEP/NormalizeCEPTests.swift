import Testing

@testable import Cepis

@Suite("normalizeCEP")
struct NormalizeCEPTests {
  @Test(
    "accepts masked, unmasked and padded forms",
    arguments: [
      ("01310-100", "01310100"), ("01310100", "01310100"), (" 01310-100\n", "01310100"),
      ("01.310-100", "01310100"), ("01 310 100", "01310100"), ("\t01001000\r\n", "01001000"),
      ("\u{00A0}01001-000\u{2028}", "01001000"),
    ])
  func accepts(input: String, expected: String) throws {
    #expect(try normalizeCEP(input) == expected)
  }

  @Test(
    "rejects anything that is not exactly 8 ASCII digits",
    arguments: [
      "", "1310-100", "013101000", "01310-10a", "abcdefgh", "01310/100", "0131\n0100",
      "٠١٣١٠١٠٠",  // Arabic-Indic digits
      "０１３１０１００",  // full-width digits
      "01310100/../health", "01310100?x=1", "01310-100#", "+01310100",
    ])
  func rejects(input: String) {
    #expect(throws: CepisError.self) { try normalizeCEP(input) }
  }

  @Test("the error quotes the input, escaped and shortened")
  func errorQuotesInput() {
    #expect {
      try normalizeCEP("12\u{1B}[31m")
    } throws: { error in
      guard case .invalidCEP(let message) = error as? CepisError else { return false }
      return message.contains("\"12\\u{1B}[31m\"") && !message.contains("\u{1B}")
    }
    #expect {
      try normalizeCEP(String(repeating: "9", count: 10_000))
    } throws: { error in
      (error as? CepisError)?.message.count ?? .max < 120
    }
  }
}

@Suite("CepisError")
struct CepisErrorTests {
  @Test("exactly the transient failures are retriable")
  func retriable() {
    #expect(CepisError.rateLimited(message: "m", retryAfter: 1).isRetriable)
    #expect(CepisError.serverError(message: "m", status: 503).isRetriable)
    #expect(CepisError.networkError(message: "m").isRetriable)
    #expect(!CepisError.invalidCEP("m").isRetriable)
    #expect(!CepisError.cepNotFound("01001000").isRetriable)
    #expect(!CepisError.invalidResponse("m").isRetriable)
  }

  @Test("descriptions are readable")
  func descriptions() {
    #expect("\(CepisError.cepNotFound("01001000"))" == "CEP 01001000 not found")
    #expect(
      CepisError.rateLimited(message: "slow down", retryAfter: 2).description
        == "slow down (retry after 2 s)")
    #expect(CepisError.serverError(message: "HTTP 503", status: 503).message.contains("503"))
  }
}
