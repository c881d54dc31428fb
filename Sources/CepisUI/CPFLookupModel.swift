#if canImport(Observation)
  import CPFHub
  import Foundation
  import Observation

  /// The state of a CPF lookup screen: what the user typed, the person found, the message
  /// to show, and whether a lookup is running.
  ///
  /// ```swift
  /// let model = CPFLookupModel(client: CPFClient(apiKey: key))
  /// model.input = "390.533.447-05"
  /// await model.lookup()
  /// model.person?.name   // or model.errorMessage, in Portuguese
  /// ```
  ///
  /// Starting a lookup cancels the one still in flight, and a lookup that was superseded never
  /// writes its result: a slow answer for an old CPF cannot overwrite the answer for the CPF
  /// the user typed last.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @MainActor
  @Observable
  public final class CPFLookupModel {
    /// The CPF as the user types it, masked or not.
    public var input: String
    /// The person found by the latest lookup, or `nil`.
    public private(set) var person: Person?
    /// The latest lookup's error as a Brazilian Portuguese sentence for the screen, or `nil`.
    public private(set) var errorMessage: String?
    /// The latest lookup's error, for code that wants to branch on it, or `nil`.
    public private(set) var error: CPFHubError?
    /// Whether a lookup is running.
    public private(set) var isLoading = false

    @ObservationIgnored private let client: CPFClient
    @ObservationIgnored private var current: Task<Void, Never>?
    @ObservationIgnored private var generation = 0

    /// The message shown when a lookup fails with something other than `CPFHubError`.
    public static let genericErrorMessage = "Não foi possível consultar o CPF. Tente novamente."

    /// Creates a model that looks CPFs up with `client`.
    public init(client: CPFClient, input: String = "") {
      self.client = client
      self.input = input
    }

    /// Starts looking up ``input`` and returns at once, for a button or a submit action.
    ///
    /// Cancels the lookup still in flight. The returned task ends when this lookup has
    /// finished (or was superseded); awaiting it is optional.
    @discardableResult
    public func lookup() -> Task<Void, Never> {
      current?.cancel()
      generation &+= 1
      let token = generation
      let text = input
      let client = client
      person = nil
      error = nil
      errorMessage = nil
      isLoading = true
      let task = Task { @MainActor [weak self] in
        let result: Result<Person, any Error>
        do {
          result = .success(try await client.lookup(text))
        } catch {
          result = .failure(error)
        }
        self?.finish(token, result)
      }
      current = task
      return task
    }

    /// Looks up ``input`` and returns when the lookup has finished or was superseded by a
    /// newer one; cancelling the calling task cancels the lookup.
    public func lookup() async {
      let task: Task<Void, Never> = lookup()
      await withTaskCancellationHandler {
        await task.value
      } onCancel: {
        task.cancel()
      }
    }

    /// Cancels the lookup in flight, if any, leaving ``person`` and ``errorMessage`` empty.
    public func cancel() {
      current?.cancel()
      current = nil
      generation &+= 1
      isLoading = false
    }

    private func finish(_ token: Int, _ result: Result<Person, any Error>) {
      // A superseded or cancelled lookup leaves the state to the newer one.
      guard token == generation else { return }
      current = nil
      isLoading = false
      switch result {
      case .success(let found):
        person = found
      case .failure(let failure as CPFHubError):
        error = failure
        errorMessage = failure.errorDescription
      case .failure(is CancellationError):
        break
      case .failure:
        errorMessage = Self.genericErrorMessage
      }
    }
  }
#endif
