package sso

import (
	"testing"

	"github.com/crewjam/saml"
)

// Who a SAML assertion names: the NameID, unless it is transient (new at every sign-in), when
// the e-mail stands in for it, prefixed so it cannot be mistaken for a persistent NameID.
func TestIdentityOfAnAssertion(t *testing.T) {
	withEmail := &saml.Assertion{AttributeStatements: []saml.AttributeStatement{{Attributes: []saml.Attribute{
		{Name: "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress", Values: []saml.AttributeValue{{Value: "Carol@Acme.test"}}},
		{FriendlyName: "displayName", Values: []saml.AttributeValue{{Value: "Carol"}}},
	}}}}
	for _, tc := range []struct {
		name                 string
		assertion            *saml.Assertion
		signed               signedAssertion
		subject, email, full string
	}{
		{"persistent NameID and an e-mail attribute", withEmail,
			signedAssertion{nameID: "00u1abc", nameIDFormat: string(saml.PersistentNameIDFormat)}, "00u1abc", "Carol@Acme.test", "Carol"},
		{"transient NameID", withEmail,
			signedAssertion{nameID: "_a9f3", nameIDFormat: string(saml.TransientNameIDFormat)}, "email:carol@acme.test", "Carol@Acme.test", "Carol"},
		{"e-mail NameID and no attributes", &saml.Assertion{},
			signedAssertion{nameID: "dave@acme.test", nameIDFormat: string(saml.EmailAddressNameIDFormat)}, "dave@acme.test", "dave@acme.test", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := identityOf(tc.assertion, &tc.signed)
			if id.Subject != tc.subject || id.Email != tc.email || id.Name != tc.full || !id.EmailVerified {
				t.Fatalf("identity %+v, want subject %q e-mail %q name %q, verified", id, tc.subject, tc.email, tc.full)
			}
		})
	}
}
