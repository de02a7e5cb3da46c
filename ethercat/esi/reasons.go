package esi

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// why says why an element or attribute of ETG.2000 is not read, by the
// last steps of its path; anything it does not name gets etgxml.NotRead.
func why(pattern string) string {
	two, one := etgxml.LastSteps(pattern)
	switch two {
	case "Descriptions/Modules":
		return "ignored: modules of modular devices are not read"
	case "Device/Slots":
		return "ignored: slots and modules of modular devices are not read; the device is read without them"
	case "Device/ESC":
		return "ignored: ESC register presets are not read"
	case "Device/Su":
		return "ignored: sync units are not read"
	case "Device/Sci":
		return "ignored: SCI (configured device) content is not read"
	case "Device/HideType", "Device/AlternativeType":
		return "ignored: the alternatives a configuration tool offers"
	case "Device/SubDevice":
		return "ignored: sub-devices are not read"
	case "Device/URL":
		return "ignored: a documentation link"
	case "Dictionary/DictionaryFile":
		return "ignored: a dictionary in a separate file is not read"
	case "Dictionary/UnitTypes":
		return "ignored: unit type definitions are not read (the unit codes of objects are)"
	case "SoE/InitCmd":
		return "ignored: SoE init commands are not supported"
	case "Profile/Diagnostics", "Profile/DiagMessages":
		return "ignored: diagnosis messages are not read"
	case "Info/Port":
		return "ignored: port descriptions are not read"
	case "Info/EtherCATController":
		return "ignored: the controller's resources are not read"
	}
	return whyAnywhere(one)
}

// whyAnywhere names the elements ignored wherever they are.
func whyAnywhere(name string) string {
	switch name {
	case "InfoReference":
		return "ignored: the content of referenced files is not read; give those files too"
	case "VendorSpecific":
		return "ignored: vendor-specific content"
	case "Comment":
		return "ignored: a comment"
	case "DisplayName":
		return "ignored: a display name (the Name is read)"
	case "Properties", "Property":
		return "ignored: vendor properties"
	case "Xml":
		return "ignored: embedded XML"
	}
	return ""
}
