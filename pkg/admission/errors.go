/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package admission

import (
	"errors"
	"fmt"
)

// Reason says why a request was refused. The values are the Kubernetes
// status reasons (metav1.StatusReason) of the same meaning.
type Reason string

// The reasons a plugin refuses a request with.
const (
	// ReasonForbidden (HTTP 403): the request is well-formed, and not
	// allowed.
	ReasonForbidden Reason = "Forbidden"
	// ReasonInvalid (HTTP 422): a field of the object has a bad value.
	ReasonInvalid Reason = "Invalid"
)

// Error is a plugin's refusal of a request. Its text is the message the
// Kubernetes API status of the same reason carries (apimachinery's
// errors.NewForbidden and errors.NewInvalid with one field error), so that
// clients see the same words whether the core runs in tpkit or in Arktos.
// The adapter (pkg/admission/k8s) turns it into that status; an Arktos
// build passes Message to its own admission.NewForbidden.
type Error struct {
	Reason Reason
	// Group is the API group ("apps"; "" for the core group).
	Group string
	// Resource is the plural resource ("daemonsets"), named by Forbidden.
	Resource string
	// Kind is the object's kind ("Tenant"), named by Invalid.
	Kind string
	// Name is the object's name.
	Name string
	// Message says why: for Forbidden the whole reason, for Invalid what is
	// wrong with Field.
	Message string
	// Field is the path of the bad field ("metadata.name"), Invalid only.
	Field string
	// Value is the bad field's value, Invalid only.
	Value string
}

// NewForbidden is the refusal "<resource>.<group> <name> is forbidden:
// <message>".
func NewForbidden(group, resource, name, message string) *Error {
	return &Error{Reason: ReasonForbidden, Group: group, Resource: resource, Name: name, Message: message}
}

// NewInvalid is the refusal "<Kind>.<group> <name> is invalid: <field>:
// Invalid value: <value>: <message>".
func NewInvalid(group, kind, name, field, value, message string) *Error {
	return &Error{Reason: ReasonInvalid, Group: group, Kind: kind, Name: name, Field: field, Value: value, Message: message}
}

// Code is the HTTP status code of e's reason: 403, 422, or 500 for a
// reason this package does not define.
func (e *Error) Code() int {
	switch e.Reason {
	case ReasonForbidden:
		return 403
	case ReasonInvalid:
		return 422
	}
	return 500
}

// Error returns the status message, formatted as apimachinery formats it.
func (e *Error) Error() string {
	switch e.Reason {
	case ReasonForbidden:
		resource := qualified(e.Resource, e.Group)
		switch {
		case resource == "":
			return fmt.Sprintf("forbidden: %s", e.Message)
		case e.Name == "":
			return fmt.Sprintf("%s is forbidden: %s", resource, e.Message)
		}
		return fmt.Sprintf("%s %q is forbidden: %s", resource, e.Name, e.Message)
	case ReasonInvalid:
		return fmt.Sprintf("%s %q is invalid: %s", qualified(e.Kind, e.Group), e.Name, e.FieldError())
	}
	return fmt.Sprintf("%s: %s", e.Reason, e.Message)
}

// FieldError is an Invalid error's one field error, as apimachinery's
// field.Invalid(path, value, message).Error() prints it.
func (e *Error) FieldError() string {
	s := fmt.Sprintf("%s: Invalid value: %q", e.Field, e.Value)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// AsError finds the *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// qualified is schema.GroupResource's and GroupKind's String: "name.group",
// or "name" in the core group.
func qualified(name, group string) string {
	if group == "" {
		return name
	}
	return name + "." + group
}
