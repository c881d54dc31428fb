#if canImport(Observation)
  import BrazilianDocuments
  import Cepis
  import Foundation
  import Observation

  /// The state of an address form that fills itself from the CEP: bind its fields to text
  /// fields, and the street, neighbourhood, city and state arrive as the customer finishes
  /// typing the CEP.
  ///
  /// ```swift
  /// let form = AddressFormModel(client: client, debounce: .milliseconds(300))  // both defaulted
  /// form.cep = "01001000"   // reads back "01001-000"; `uf` is "SP" at once, offline
  /// // 300 ms later, one lookup; then:
  /// form.logradouro         // "Praça da Sé"
  /// form.state              // .found(address)
  /// form.numero = "100"
  /// form.address            // the FilledAddress to submit, once `isComplete`
  /// ```
  ///
  /// What the model promises the customer:
  /// - ``cep`` keeps digits only, at most 8, and adds the hyphen as they are typed; under
  ///   8 digits the state is ``State/incomplete`` and nothing is asked.
  /// - At 8 digits ``uf`` is set at once from the Correios CEP ranges (offline, see
  ///   `UF.init(cep:)` in BrazilianDocuments), and **one** lookup starts after the debounce:
  ///   a CEP changed within the debounce is never asked, and a lookup for a CEP no longer in
  ///   the field is cancelled; its late answer never lands.
  /// - A found address fills ``logradouro``, ``bairro``, ``localidade`` and ``uf``, and
  ///   ``complemento`` only when it is empty (or still holds what the model put there). A
  ///   field the customer edited after the CEP changed keeps the customer's text, and an empty
  ///   answer never wipes text the customer typed. ``numero`` is never touched.
  /// - When a different CEP is completed, the fields the model filled for the previous CEP
  ///   are cleared, so a street can never be submitted with another street's CEP.
  /// - Not found and failures leave every field editable, with a Portuguese ``message``
  ///   telling the customer to check the CEP or the connection, or to fill the address by
  ///   hand; ``retry()`` asks again.
  ///
  /// The lookup is the client's `Client.lookup(_:)`: the client's fallbacks, hedging and
  /// retries apply, and a client that caches answers fills a CEP seen before while offline.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @MainActor
  @Observable
  public final class AddressFormModel {
    /// Where the CEP lookup stands.
    public enum State: Sendable, Equatable {
      /// The CEP field is empty.
      case idle
      /// The CEP has fewer than 8 digits: nothing is asked yet.
      case incomplete
      /// The CEP is complete and its lookup is waiting out the debounce or in flight.
      case searching
      /// The CEP exists: its address, as the client returned it, filled the form.
      case found(Address)
      /// The CEP does not exist; the customer fills the address by hand.
      case notFound
      /// The lookup failed (no connection, the service down, a captive portal…); the
      /// customer may ``AddressFormModel/retry()`` or fill the address by hand.
      case failed(CepisError)
    }

    /// The CEP as shown in its field, formatted as typed: digits only, at most 8, with the
    /// hyphen after the fifth (`"01001"`, `"01001-0"`, `"01001-000"`).
    ///
    /// Setting it with anything (`"01.001-000"`, pasted text) keeps the first 8 digits.
    /// Setting the value it already holds (a text field writing back) starts nothing.
    public var cep: String {
      get { cepText }
      set { setCEP(newValue) }
    }
    /// The street, avenue or square.
    public var logradouro = ""
    /// The house or building number; always the customer's.
    public var numero = ""
    /// Apartment, block or the Correios' complement.
    public var complemento = ""
    /// The neighbourhood.
    public var bairro = ""
    /// The town or city.
    public var localidade = ""
    /// The two-letter federative unit (`"SP"`).
    public var uf = ""
    /// Where the CEP lookup stands.
    public private(set) var state: State = .idle
    /// What to show the customer about the lookup, in Brazilian Portuguese, or `nil` when
    /// there is nothing to say (typing, searching, found).
    public private(set) var message: String?

    /// The message for a CEP that does not exist.
    public static let notFoundMessage =
      "CEP não encontrado. Confira o número ou preencha o endereço."
    /// The message for a lookup that could not reach the service.
    public static let offlineMessage =
      "Não foi possível buscar o CEP. Verifique sua conexão ou preencha o endereço manualmente."
    /// The message for a service that is up but cannot answer now (rate limits, 5xx).
    public static let unavailableMessage =
      "A busca de CEP está indisponível no momento. Tente novamente ou preencha o endereço manualmente."
    /// The message for a CEP the service rejects as malformed.
    public static let invalidCEPMessage =
      "CEP inválido. Confira o número ou preencha o endereço."

    private var cepText = ""
    @ObservationIgnored private let client: Client
    @ObservationIgnored private let debounce: Duration
    @ObservationIgnored private let sleep: @Sendable (Duration) async throws -> Void
    @ObservationIgnored private var task: Task<Void, Never>?
    @ObservationIgnored private var generation = 0
    /// What the model itself last wrote into each autofilled field.
    @ObservationIgnored private var filled = Autofill()
    /// The autofilled fields as they were when the CEP last changed.
    @ObservationIgnored private var baseline = Autofill()

    /// Creates an empty form that looks CEPs up with `client`.
    ///
    /// - Parameters:
    ///   - client: the CEP client; its fallbacks, hedging and retries apply to every lookup.
    ///   - debounce: how long a complete CEP must stay unchanged before it is asked.
    ///   - clock: the clock the debounce is measured on (a test clock in tests).
    public init(
      client: Client = .shared,
      debounce: Duration = .milliseconds(300),
      clock: any Clock<Duration> = ContinuousClock()
    ) {
      self.client = client
      self.debounce = debounce
      self.sleep = { duration in try await clock.sleep(for: duration) }
    }

    deinit {
      // A form that is gone asks nothing more.
      task?.cancel()
    }

    /// Whether the form holds everything an address needs to be submitted: a complete CEP,
    /// street, number, neighbourhood, city and a valid UF that agrees with the CEP's range,
    /// with no lookup running. The same as `address != nil`.
    public var isComplete: Bool { address != nil }

    /// The address to submit, built from the fields (trimmed), or `nil` while
    /// ``isComplete`` is false.
    ///
    /// ``FilledAddress/ibge`` carries the municipality's IBGE code when the city and UF are
    /// still those of the found address.
    public var address: FilledAddress? {
      let digits = Self.digits(of: cepText)
      guard digits.utf8.count == 8, state != .searching else { return nil }
      let street = Self.trimmed(logradouro)
      let number = Self.trimmed(numero)
      let district = Self.trimmed(bairro)
      let city = Self.trimmed(localidade)
      guard !street.isEmpty, !number.isEmpty, !district.isEmpty, !city.isEmpty,
        let unit = UF(rawValue: Self.trimmed(uf).uppercased())
      else { return nil }
      if let fromRange = UF(cep: digits), fromRange != unit { return nil }
      var ibge: String?
      if case .found(let found) = state, !found.ibge.isEmpty, found.localidade == city,
        found.uf == unit.rawValue
      {
        ibge = found.ibge
      }
      return FilledAddress(
        cep: digits, logradouro: street, numero: number,
        complemento: Self.trimmed(complemento), bairro: district, localidade: city, uf: unit,
        ibge: ibge)
    }

    /// Asks again for the CEP in the field, at once (no debounce): after a failure, or to
    /// refresh. Does nothing unless the CEP is complete. Fields the customer edited since
    /// the CEP changed are still kept.
    public func retry() {
      let digits = Self.digits(of: cepText)
      guard digits.utf8.count == 8 else { return }
      startLookup(digits, after: nil)
    }

    /// The lookup in flight or waiting out its debounce, if any, for tests to await.
    var pendingLookup: Task<Void, Never>? { task }

    // MARK: - The CEP field

    private func setCEP(_ text: String) {
      let previous = Self.digits(of: cepText)
      let digits = String(Self.digits(of: text).prefix(8))
      let formatted = Self.format(digits)
      if formatted != cepText { cepText = formatted }
      guard digits != previous else { return }
      cancelLookup()
      switch digits.utf8.count {
      case 0: show(.idle)
      case 8: complete(digits)
      default: show(.incomplete)
      }
    }

    /// A new complete CEP: clear what the model filled for the previous one, set the UF
    /// offline, remember the fields as they are now, and ask after the debounce.
    private func complete(_ digits: String) {
      for field in Autofill.fields {
        let own = filled[keyPath: field.own]
        guard !own.isEmpty, self[keyPath: field.model] == own else { continue }
        self[keyPath: field.model] = ""
        filled[keyPath: field.own] = ""
      }
      if let unit = UF(cep: digits) {
        uf = unit.rawValue
        filled.uf = unit.rawValue
      }
      baseline = Autofill(self)
      startLookup(digits, after: debounce)
    }

    // MARK: - The lookup

    private func cancelLookup() {
      task?.cancel()
      task = nil
      generation &+= 1
    }

    private func startLookup(_ digits: String, after delay: Duration?) {
      cancelLookup()
      let token = generation
      show(.searching)
      let client = client
      let sleep = sleep
      task = Task { @MainActor [weak self] in
        if let delay, delay > .zero {
          do { try await sleep(delay) } catch { return }
        }
        // Superseded while waiting: this CEP is never asked.
        if Task.isCancelled { return }
        let result: Result<Address, any Error>
        do {
          result = .success(try await client.lookup(digits))
        } catch {
          result = .failure(error)
        }
        self?.finish(token, result)
      }
    }

    private func finish(_ token: Int, _ result: Result<Address, any Error>) {
      // An answer for a CEP no longer in the field never lands.
      guard token == generation else { return }
      task = nil
      switch result {
      case .success(let found):
        fill(from: found)
        show(.found(found))
      case .failure(CepisError.cepNotFound):
        show(.notFound)
      case .failure(let error as CepisError):
        show(.failed(error))
      case .failure(is CancellationError):
        show(.failed(.networkError(message: "the lookup was cancelled")))
      case .failure(let error):
        show(.failed(.invalidResponse(String(describing: error))))
      }
    }

    private func fill(from found: Address) {
      let answer = Autofill(found)
      for field in Autofill.fields {
        let current = self[keyPath: field.model]
        let isOwn = current == filled[keyPath: field.own]
        let value = answer[keyPath: field.own]
        // Edited by the customer after the CEP changed: theirs.
        if current != baseline[keyPath: field.own] { continue }
        // The complement is the customer's as soon as they wrote one.
        if field.onlyWhenEmpty, !current.isEmpty, !isOwn { continue }
        // A CEP without a street (a whole town) must not wipe the street the customer typed.
        if value.isEmpty, !isOwn { continue }
        self[keyPath: field.model] = value
        filled[keyPath: field.own] = value
      }
    }

    private func show(_ newState: State) {
      state = newState
      switch newState {
      case .idle, .incomplete, .searching, .found:
        message = nil
      case .notFound:
        message = Self.notFoundMessage
      case .failed(let error):
        message = Self.message(for: error)
      }
    }

    private static func message(for error: CepisError) -> String {
      switch error {
      case .cepNotFound: return notFoundMessage
      case .invalidCEP: return invalidCEPMessage
      case .rateLimited, .serverError: return unavailableMessage
      // An HTML page instead of JSON is most often a Wi-Fi login page: a connection problem.
      case .networkError, .invalidResponse: return offlineMessage
      }
    }

    // MARK: - Text

    private static func digits(of text: String) -> String {
      String(
        decoding: text.utf8.filter { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") },
        as: UTF8.self)
    }

    private static func format(_ digits: String) -> String {
      guard digits.utf8.count > 5 else { return digits }
      return "\(digits.prefix(5))-\(digits.dropFirst(5))"
    }

    private static func trimmed(_ text: String) -> String {
      text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
  }

  /// The fields a CEP answer fills, as text.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  private struct Autofill {
    var logradouro = ""
    var complemento = ""
    var bairro = ""
    var localidade = ""
    var uf = ""

    /// Each field's place in the model and in this record.
    struct Field {
      var model: ReferenceWritableKeyPath<AddressFormModel, String>
      var own: WritableKeyPath<Autofill, String>
      /// Whether the answer writes it only when it holds nothing of the customer's.
      var onlyWhenEmpty = false
    }

    @MainActor static let fields: [Field] = [
      Field(model: \.logradouro, own: \.logradouro),
      Field(model: \.complemento, own: \.complemento, onlyWhenEmpty: true),
      Field(model: \.bairro, own: \.bairro),
      Field(model: \.localidade, own: \.localidade),
      Field(model: \.uf, own: \.uf),
    ]

    init() {}

    @MainActor init(_ model: AddressFormModel) {
      logradouro = model.logradouro
      complemento = model.complemento
      bairro = model.bairro
      localidade = model.localidade
      uf = model.uf
    }

    init(_ address: Address) {
      logradouro = address.logradouro
      complemento = address.complemento
      bairro = address.bairro
      localidade = address.localidade
      uf = address.uf
    }
  }
#endif
