#if Observability
  import CepisHTTP
  import Foundation
  import Logging

  extension CPFClient {
    /// Who listens to a client made without a logger, in a build with the `Observability`
    /// trait: the bootstrapped metrics and tracing systems, and the task-local logger a caller
    /// sets with `withLogger`.
    package static var defaultObserver: (any ClientEventObserver)? {
      ObservabilityObserver(logger: nil)
    }

    /// Creates a client that logs to `logger` (`Observability` trait).
    ///
    /// Every other parameter is as in
    /// ``init(apiKey:baseURL:pathPrefix:timeout:maxAttempts:backoffBase:backoffMax:totalTimeout:userAgent:transport:retryBudget:)``.
    /// Lines are `trace` and `debug` only; none carries the API key, the CPF or the person's
    /// name, and neither do the metrics and spans the call records.
    ///
    /// ```swift
    /// let client = CPFClient(logger: Logger(label: "onboarding.cpfhub"))
    /// ```
    public init(
      apiKey: String? = nil,
      baseURL: URL = CPFClient.defaultBaseURL,
      pathPrefix: String = "/cpf",
      timeout: TimeInterval = 10,
      maxAttempts: Int = 3,
      backoffBase: TimeInterval = 0.5,
      backoffMax: TimeInterval = 8,
      totalTimeout: TimeInterval? = 15,
      userAgent: String? = nil,
      transport: Transport = .default,
      retryBudget: RetryBudget? = .standard,
      logger: Logger
    ) {
      self.init(
        apiKey: apiKey, baseURL: baseURL, pathPrefix: pathPrefix, timeout: timeout,
        maxAttempts: maxAttempts, backoffBase: backoffBase, backoffMax: backoffMax,
        totalTimeout: totalTimeout, userAgent: userAgent, transport: transport,
        retryBudget: retryBudget, environment: ProcessInfo.processInfo.environment,
        observer: ObservabilityObserver(logger: logger))
    }
  }
#endif
