import BrazilianDocuments
import CPFHub
import CepisHTTP
import CepisSupport
import Foundation

/// `cepis cpf lookup CPF`: through CPFHub, the key from `CPFHUB_API_KEY`.
///
/// The output shows what the user asked for in full (the CPF formatted, the name, the birth
/// date); no message ever shows the key (`CPFHubError` never carries it).
enum CPFLookupCommand {
  static func run(_ context: Context) async throws -> ToolStatus {
    let format = try context.format()
    let path = context.path
    var baseURL = CPFClient.defaultBaseURL
    let urlText =
      context.parsed.value("cpfhub-url")
      ?? context.environment["CPFHUB_BASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    if let urlText {
      guard let url = URL(string: urlText), url.scheme != nil, url.host != nil else {
        throw UsageError(message: "invalid CPFHub URL '\(urlText)'", path: path)
      }
      baseURL = url
    }
    let client = CPFClient(
      apiKey: context.environment[CPFClient.apiKeyEnvironmentVariable] ?? "",
      baseURL: baseURL,
      timeout: try context.number("timeout") ?? 10,
      maxAttempts: try context.integer("attempts", range: 1...100) ?? 3,
      totalTimeout: try context.number("total-timeout") ?? 30,
      userAgent: "cepis-cli/\(CepisTool.version)",
      transport: try context.transport()
    ).observed(by: try context.eventLog(default: CPFClient.defaultObserver))
    let console = context.console
    let person: Person
    do {
      person = try await client.lookup(context.parsed.positionals[0])
    } catch let error as CPFHubError {
      console.error(error.message)
      switch error {
      case .invalidCPF, .cpfNotFound:
        return .failure
      case .missingAPIKey, .insecureTransport, .unauthorized:
        console.err("Set CPFHUB_API_KEY (and CPFHUB_BASE_URL or --cpfhub-url for another host).\n")
        return .usage
      case .networkError:
        console.noteNetworkFailure()
        return .unavailable
      case .rateLimited, .serverError, .invalidResponse:
        return .unavailable
      }
    }
    let json = JSONValue.object([
      ("cpf", .string(person.cpf.digits)), ("formatted", .string(person.cpf.formatted)),
      ("name", .string(person.name)), ("name_upper", .string(person.nameUpper)),
      ("gender", .string(person.gender)), ("birth_date", .string(person.birthDate)),
    ])
    if format == .json {
      console.out(json.rendered + "\n")
      return .success
    }
    var writer = RecordWriter(
      format: format, console: console,
      csvHeader: ["cpf", "formatted", "name", "name_upper", "gender", "birth_date"])
    writer.begin()
    var text = "\(person.cpf.formatted)  \(person.name)"
    if !person.gender.isEmpty { text += "  \(person.gender)" }
    text += "  \(person.birthDate)"
    writer.write(
      text: text, json: json,
      csv: [
        person.cpf.digits, person.cpf.formatted, person.name, person.nameUpper, person.gender,
        person.birthDate,
      ])
    writer.end()
    return .success
  }
}
