import BrazilianDocuments
import Foundation
import Testing

@testable import CPFHub

@Suite("Person decoding")
struct PersonTests {
  let cpf = "39053344705"

  func decode(_ json: String) throws -> Person {
    try JSONDecoder().decode(Person.self, from: Data(json.utf8))
  }

  @Test func decodesTheAPIShape() throws {
    let person = try decode(
      #"{"cpf":"\#(cpf)","name":"Maria da Silva","nameUpper":"MARIA DA SILVA","gender":"F","#
        + #""birthDate":"15/06/1990","day":15,"month":6,"year":1990}"#)
    #expect(person.cpf == (try CPF(cpf)))
    #expect(person.name == "Maria da Silva")
    #expect(person.nameUpper == "MARIA DA SILVA")
    #expect(person.gender == "F")
    #expect(person.birthDate == "15/06/1990")
    #expect([person.day, person.month, person.year] as [Int] == [15, 6, 1990])
    let components = person.birthDateComponents
    #expect(components.year == 1990 && components.month == 6 && components.day == 15)
    #expect(components.calendar?.identifier == .gregorian)
  }

  @Test func acceptsNumericStringsAndMissingParts() throws {
    let person = try decode(
      #"{"cpf":"390.533.447-05","name":"Ana","birthDate":"29/02/2000","day":"29"}"#)
    #expect(person.nameUpper == "ANA")
    #expect(person.gender == "")
    #expect([person.day, person.month, person.year] as [Int] == [29, 2, 2000])
  }

  @Test(arguments: [
    #""birthDate":"31/02/1990""#, #""birthDate":"1990-06-15""#, #""birthDate":"5/6/1990""#,
    #""birthDate":"15/06/1990","day":14"#,
  ])
  func rejectsBadDates(_ fragment: String) {
    #expect(throws: DecodingError.self) {
      try decode(#"{"cpf":"\#(cpf)","name":"X",\#(fragment)}"#)
    }
  }

  @Test func rejectsAnInvalidCPF() {
    #expect(throws: DecodingError.self) {
      try decode(#"{"cpf":"39053344706","name":"X","birthDate":"15/06/1990"}"#)
    }
  }

  @Test func roundTripsThroughJSON() throws {
    let person = Person(
      cpf: try CPF(cpf), name: "Maria", nameUpper: "MARIA", gender: "F",
      birthDate: "15/06/1990", day: 15, month: 6, year: 1990)
    let data = try JSONEncoder().encode(person)
    #expect(try JSONDecoder().decode(Person.self, from: data) == person)
    #expect(String(decoding: data, as: UTF8.self).contains(#""cpf":"\#(cpf)""#))
  }

  @Test func printingAPersonRedactsTheCPF() throws {
    let person = Person(
      cpf: try CPF(cpf), name: "Maria", nameUpper: "MARIA", gender: "F",
      birthDate: "15/06/1990", day: 15, month: 6, year: 1990)
    for text in allStrings(of: person) {
      #expect(!text.contains(cpf))
      #expect(!text.contains("390.533.447-05"))
    }
  }
}

@Suite("Transport rules")
struct TransportTests {
  @Test(arguments: [
    "localhost", "LOCALHOST", "localhost.", "127.0.0.1", "127.255.0.9", "::1", "[::1]",
    "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
  ])
  func loopbackHosts(_ host: String) {
    #expect(CPFClient.isLoopback(host: host))
  }

  @Test(arguments: [
    "", "example.com", "0.0.0.0", "128.0.0.1", "127.0.0.1.example.com", "127.1", "0127.0.0.1",
    "localhost.example.com", "::", "::2", "::ffff:10.0.0.1", "1::1", "fe80::1%lo0",
    "127.0.0.256",
  ])
  func otherHosts(_ host: String) {
    #expect(!CPFClient.isLoopback(host: host))
  }
}

@Suite("CPFHubError")
struct ErrorTests {
  static let all: [CPFHubError] = [
    .invalidCPF(.wrongLength(.cpf, expected: 11, actual: 3)), .invalidCPF(nil), .missingAPIKey,
    .insecureTransport(host: "example.com"), .unauthorized(status: 401),
    .cpfNotFound(redactedCPF: "***.533.447-**"), .rateLimited(message: "429", retryAfter: 2),
    .rateLimited(message: "429", retryAfter: nil), .serverError(message: "503", status: 503),
    .networkError(message: "reset"), .networkError(message: "timed out"), .invalidResponse("html"),
  ]

  @Test func retriableCases() {
    let retriable = Self.all.filter(\.isRetriable)
    #expect(
      retriable == [
        .rateLimited(message: "429", retryAfter: 2), .rateLimited(message: "429", retryAfter: nil),
        .serverError(message: "503", status: 503), .networkError(message: "reset"),
        .networkError(message: "timed out"),
      ])
  }

  @Test func everyCaseHasBothTexts() {
    for error in Self.all {
      #expect(!error.message.isEmpty)
      #expect(error.description == error.message)
      #expect(error.errorDescription?.isEmpty == false)
      #expect(error.localizedDescription == error.errorDescription)
    }
    #expect(
      CPFHubError.rateLimited(message: "rate limited", retryAfter: 2).message.contains(
        "retry after 2 s"))
  }
}

@Suite("CPFClient configuration")
struct ConfigurationTests {
  @Test func normalizesItsSettings() {
    let client = CPFClient(
      apiKey: "  key  ", baseURL: URL(string: "https://api.cpfhub.io///")!, pathPrefix: "v1/cpf/",
      timeout: -1, maxAttempts: 0)
    #expect(client.baseURL.absoluteString == "https://api.cpfhub.io")
    #expect(client.pathPrefix == "/v1/cpf")
    #expect(client.maxAttempts == 1)
    #expect(client.timeout > 0)
    #expect(client.hasAPIKey)
    #expect(client.totalTimeout == 15)
  }

  @Test func rejectsKeysThatCouldSplitAHeader() {
    #expect(!makeClient(nil, .urlSession, apiKey: "abc\r\nx-evil: 1").hasAPIKey)
    #expect(!makeClient(nil, .urlSession, apiKey: "").hasAPIKey)
    #expect(
      makeClient(nil, .urlSession, apiKey: "", environment: ["CPFHUB_API_KEY": "k"]).hasAPIKey
        == false)
  }
}
