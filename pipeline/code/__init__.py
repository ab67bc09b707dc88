"""The workspace side: values, components and anchors read from code and configs."""
