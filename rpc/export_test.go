package rpc

// Wire constants, pinned by wire_test.go.
var (
	CtlBase, CtlGoodbye, CtlReport, CtlVerdict, CtlCancel, CtlHello = ctlBase, ctlGoodbye, ctlReport, ctlVerdict, ctlCancel, ctlHello
	Statuses                                                        = []status{statusOK, statusError, statusPanic, statusNotFound, statusBusy, statusRequestTooLarge, statusReplyTooLarge, statusClosed, statusBadRequest}
	TimeoutMillis                                                   = timeoutMillis
)
