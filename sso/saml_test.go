package sso

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/crewjam/saml"
)

// Our SP metadata names only the binding our ACS speaks (HTTP-POST), and states no validUntil:
// an IdP that loads it once must not find it expired two days later.
func TestOurMetadataAdvertisesOnlyWhatWeSpeak(t *testing.T) {
	sp, err := NewSAML(SAMLConfig{EntityID: "https://bgcheck.example/md", ACSURL: "https://bgcheck.example/acs",
		MetadataURL: "https://bgcheck.example/md"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sp.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "validUntil") || strings.Contains(string(raw), "Artifact") {
		t.Fatalf("metadata:\n%s", raw)
	}
	var ed saml.EntityDescriptor
	if err := xml.Unmarshal(raw, &ed); err != nil {
		t.Fatal(err)
	}
	if ed.EntityID != "https://bgcheck.example/md" || len(ed.SPSSODescriptors) != 1 {
		t.Fatalf("entity %+v", ed)
	}
	d := ed.SPSSODescriptors[0]
	if len(d.AssertionConsumerServices) != 1 || d.AssertionConsumerServices[0].Binding != saml.HTTPPostBinding ||
		d.AssertionConsumerServices[0].Location != "https://bgcheck.example/acs" || d.WantAssertionsSigned == nil || !*d.WantAssertionsSigned {
		t.Fatalf("SP descriptor %+v", d)
	}
}
