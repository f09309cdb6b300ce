package mail

import (
	"context"
	"fmt"
	"strings"
)

// InvoiceLine is one line of an invoice's e-mail.
type InvoiceLine struct {
	Package   string
	Quantity  int
	UnitPrice string // formatted, e.g. $29.99
	Amount    string
}

// Invoice tells an account's admins that a period's invoice was issued.
type Invoice struct {
	To          []string
	AccountName string
	Number      string
	Period      string // YYYY-MM
	Lines       []InvoiceLine
	Total       string
	Link        string // the printable invoice in the dashboard
}

// Money formats US cents as dollars.
func Money(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

func invoiceText(inv Invoice) (subject, body string) {
	var lines strings.Builder
	for _, l := range inv.Lines {
		fmt.Fprintf(&lines, "  %-12s %5d x %9s = %10s\n", l.Package, l.Quantity, l.UnitPrice, l.Amount)
	}
	return fmt.Sprintf("bgcheck invoice %s for %s", inv.Number, inv.Period), fmt.Sprintf(`Hello,

invoice %s of %s for the live background checks of %s:

%s
  Total: %s

The invoice: %s
`, inv.Number, inv.AccountName, inv.Period, lines.String(), inv.Total, inv.Link)
}

// SendInvoice mails the invoice to the admins.
func (s *SMTPSender) SendInvoice(ctx context.Context, inv Invoice) error {
	subject, body := invoiceText(inv)
	return s.sendText(ctx, inv.To, subject, body)
}

// SendInvoice logs the invoice instead of mailing it (development).
func (l LogSender) SendInvoice(_ context.Context, inv Invoice) error {
	l.Log.Warn("BGCHECK_SMTP_URL is not set: the invoice is logged instead of mailed", "to", inv.To, "number", inv.Number, "total", inv.Total)
	return nil
}
